import SDBus

/// systemd-resolved's DNS servers, read over D-Bus and followed: the Manager's
/// `DNS` property (`a(iiay)`: the interface index, 0 for a global server, the
/// family, the address), read again on every `PropertiesChanged` resolved sends
/// and whenever its name changes owner. How reachd knows the servers each link
/// uses when resolved runs (docs/path.md, "DNS").
final class ResolvedServers {
    static let name = "org.freedesktop.resolve1"
    static let path = "/org/freedesktop/resolve1"

    /// One server: the interface it is used through (nil: global), and its address bytes (4 or 16).
    package struct Server: Equatable, Sendable {
        package var interfaceIndex: Int32?
        package var address: [UInt8]
    }

    private let connection: BusConnection
    /// Called on the loop with resolved's servers, or nil when resolved is not (or no longer) there.
    private let onChange: ([Server]?) -> Void
    private var reading = false
    private var readAgain = false

    package init(connection: BusConnection, onChange: @escaping ([Server]?) -> Void) throws(BusError) {
        self.connection = connection
        self.onChange = onChange
        try connection.onSignal(
            sender: Self.name, path: nil, interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged"
        ) { [weak self] _ in self?.read() }
        try connection.onSignal(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged", twoArguments: false
        ) { [weak self] name, _, _ in
            if name == Self.name { self?.read() }
        }
        read()
    }

    /// One Get at a time; a change meanwhile asks for one more.
    private func read() {
        guard !reading else { return readAgain = true }
        reading = true
        do {
            try connection.callAsync(
                Self.name, Self.path, "org.freedesktop.DBus.Properties", "Get",
                [.string("org.freedesktop.resolve1.Manager"), .string("DNS")]
            ) { [weak self] reply in
                guard let self else { return }
                reading = false
                onChange(reply.errorName == nil ? Self.servers(in: reply) : nil)
                if readAgain {
                    readAgain = false
                    read()
                }
            }
        } catch {
            reading = false
            onChange(nil)
        }
    }

    /// The servers of a `Get` reply: a variant holding `a(iiay)`.
    static func servers(in reply: BusMessage) -> [Server]? {
        guard reply.enter("v", "a(iiay)"), reply.enter("a", "(iiay)") else { return nil }
        var servers: [Server] = []
        while reply.enter("r", "iiay") {
            defer { reply.exit() }
            guard let index = reply.int32(), reply.int32() != nil, let address = reply.bytes() else { return nil }
            servers.append(Server(interfaceIndex: index == 0 ? nil : index, address: address))
        }
        return servers
    }
}
