import SDBus

/// Owns `org.freedesktop.NetworkManager` only while no NetworkManager could want it.
///
/// NetworkManager asks for its name without queueing and without replacing, and
/// exits when the name is taken: allowing replacement would not help it. So the
/// name is held only while nobody else owns it *and* systemd has no job for
/// `NetworkManager.service`. A start job is announced (`JobNew`) before its
/// process even runs, so the name is released long before NetworkManager asks
/// for it; it is taken back when the job is done and the name is still free
/// (NetworkManager stopped, failed, or was never started).
///
/// Without systemd on the bus (a test's dbus-daemon, a container) only the owner is followed.
package final class NetworkManagerName {
    package static let name = "org.freedesktop.NetworkManager"
    static let unit = "NetworkManager.service"
    static let systemd = "org.freedesktop.systemd1"

    enum Ownership { case released, requesting, owned, releasing }

    private let connection: BusConnection
    private let log: (String) -> Void
    private var ownership = Ownership.released
    /// Whether the daemon wants the surface (the config's `[compat] networkmanager`).
    private var wanted = false
    /// Someone else's unique name, while another connection owns the name.
    private var otherOwner: String?
    /// systemd's jobs for NetworkManager.service: queued or running.
    private var jobs: Set<UInt32> = []
    /// Until systemd said whether NetworkManager.service has a job, nothing is taken.
    private var askingSystemd = true
    /// The bus policy refused this user the name: said once, not asked again until wanted anew.
    private var denied = false

    /// Follows the name's owner and systemd's jobs on `connection` from now on.
    package init(connection: BusConnection, log: @escaping (String) -> Void) throws(BusError) {
        self.connection = connection
        self.log = log
        try connection.onSignal(
            sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameOwnerChanged"
        ) { [unowned self] message in
            guard message.string() == Self.name, message.string() != nil, let new = message.string() else { return }
            ownerChanged(to: new)
        }
        for member in ["JobNew", "JobRemoved"] {
            try connection.onSignal(
                sender: Self.systemd, path: "/org/freedesktop/systemd1",
                interface: "org.freedesktop.systemd1.Manager", member: member
            ) { [unowned self] message in
                guard let id = message.uint32(), message.objectPath() != nil, message.string() == Self.unit else { return }
                jobChanged(id, queued: member == "JobNew")
            }
        }
        // systemd sends job signals only to subscribers; then: a job queued before we listened?
        try connection.callAsync(Self.systemd, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "Subscribe") { _ in }
        try connection.callAsync(
            Self.systemd, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "GetUnit",
            [.string(Self.unit)]
        ) { [unowned self] reply in
            guard let unitPath = reply.objectPath() else { return systemdAnswered() } // not loaded, or no systemd
            do {
                try connection.callAsync(
                    Self.systemd, unitPath, "org.freedesktop.DBus.Properties", "Get",
                    [.string("org.freedesktop.systemd1.Unit"), .string("Job")]
                ) { [unowned self] reply in
                    if reply.enter("v", "(uo)"), reply.enter("r", "uo"), let id = reply.uint32(), id != 0 { jobs.insert(id) }
                    systemdAnswered()
                }
            } catch {
                systemdAnswered()
            }
        }
    }

    /// Takes the name when allowed, or releases it.
    package func want(_ wanted: Bool) {
        // Asked again (a reload): try again, the bus's policy may have been installed since.
        if wanted { denied = false }
        self.wanted = wanted
        reconsider()
    }

    private func systemdAnswered() {
        askingSystemd = false
        reconsider()
    }

    private func jobChanged(_ id: UInt32, queued: Bool) {
        if queued {
            jobs.insert(id)
            if ownership == .owned || ownership == .requesting {
                log("compat: systemd queued a job for \(Self.unit): releasing \(Self.name)")
            }
        } else {
            jobs.remove(id)
        }
        reconsider()
    }

    private func ownerChanged(to new: String) {
        let me = connection.uniqueName
        if new.isEmpty || new == me {
            otherOwner = nil
        } else {
            otherOwner = new
            if ownership == .owned {
                ownership = .released
                log("compat: \(new) took \(Self.name)")
            }
        }
        reconsider()
    }

    private var mayOwn: Bool { wanted && !denied && otherOwner == nil && jobs.isEmpty && !askingSystemd }

    private func reconsider() {
        switch (ownership, mayOwn) {
        case (.released, true): request()
        case (.owned, false): release()
        default: break // a request or release in flight reconsiders when it is answered
        }
    }

    private func request() {
        ownership = .requesting
        // DO_NOT_QUEUE | ALLOW_REPLACEMENT: never wait in line for a name NetworkManager may want.
        let flags: UInt32 = 0x4 | 0x1
        call("RequestName", [.string(Self.name), .uint32(flags)]) { [unowned self] reply in
            switch (reply.errorName, reply.uint32()) {
            case (nil, 1?), (nil, 4?): // primary owner, already owner
                ownership = .owned
                log("compat: owning \(Self.name)")
            case ("org.freedesktop.DBus.Error.AccessDenied"?, _):
                ownership = .released
                denied = true
                log(
                    "compat: the bus policy does not let this user own \(Self.name) (\(reply.errorMessage ?? "access denied")); link /usr/share/reachd/dbus-1/io.reachd.NetworkManagerCompat.conf into /etc/dbus-1/system.d/, reload the bus, then reload reachd"
                )
            case (nil, _): // exists: NameOwnerChanged says when it is free
                ownership = .released
                otherOwner = otherOwner ?? "another connection"
            default:
                ownership = .released
                denied = true
                log("compat: could not own \(Self.name): \(reply.errorMessage ?? reply.errorName ?? "?")")
            }
            reconsider()
        }
    }

    private func release() {
        ownership = .releasing
        call("ReleaseName", [.string(Self.name)]) { [unowned self] _ in
            ownership = .released
            log("compat: released \(Self.name)")
            reconsider()
        }
    }

    private func call(_ member: String, _ arguments: [BusMessage.Argument], reply: @escaping (BusMessage) -> Void) {
        do {
            try connection.callAsync(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", member, arguments, reply: reply)
        } catch {
            ownership = .released
            denied = true
            log("compat: \(error)")
        }
    }
}
