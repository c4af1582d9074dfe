import FoundationEssentials
import IPAddresses
import SystemCalls
import TOML

/// How a monitor watches the network: the `[monitor]` table of reachd.toml.
public struct MonitorOptions: Sendable, Equatable {
    /// The IPv4 address whose route defines the path. Only looked up, never sent to.
    public var probeIPv4: String { probeAddresses.v4.description }
    /// The IPv6 address whose route defines the path. Only looked up, never sent to.
    public var probeIPv6: String { probeAddresses.v6.description }
    /// Interface name globs never chosen as the path (`docker*`, `veth*`).
    public var ignore: [String]
    /// Interface name globs that make the path expensive.
    public var metered: [String]
    /// Interface name globs and the kind they are, whatever detection says.
    public var kindOverrides: [(pattern: String, kind: InterfaceKind)]
    /// Receive buffer asked for on the event socket. The default (4 MiB) survives
    /// bursts of thousands of changes; an overrun is recovered from in any case.
    public var receiveBufferSize: Int
    /// Watch another network namespace: a path such as `/run/netns/NAME`. nil: this process's.
    public var networkNamespace: String?
    /// Watch a kernel other than the sockets' (a test's embedded kernel); nil: the sockets'.
    package var kernel: (any KernelSource)?
    /// The resolv.conf whose servers the path's `dns` judges, followed as it is
    /// replaced (docs/path.md, "DNS"); nil: DNS is not followed. reachd asks
    /// systemd-resolved over D-Bus instead when it runs and this is the default.
    public var resolvConf: String?

    /// The network's NAT64 prefix ("64:ff9b::/96"), whatever the network announces
    /// (docs/path.md, "IPv6-only networks: NAT64 and CLAT"); nil: as announced.
    public var nat64Prefix: String? { configuredNAT64?.description }
    package var configuredNAT64: NAT64Prefix?

    /// Where resolvers are configured on Linux.
    public static let defaultResolvConf = "/etc/resolv.conf"

    package var probeAddresses: (v4: IPAddress, v6: IPAddress)

    /// a.root-servers.net: stable for decades, routed like any Internet traffic, and never
    /// on-link (test labs put hosts on TEST-NET, 192.0.2.0/24). Nothing is ever sent to it.
    public static let defaultProbeIPv4 = "198.41.0.4"
    /// a.root-servers.net's IPv6 address, for the same reasons.
    public static let defaultProbeIPv6 = "2001:503:ba3e::2:30"

    /// - Throws: `MonitorOptionsError` for a probe address that is not a global address of its family,
    ///   or a NAT64 prefix that is not one of RFC 6052's.
    public init(
        probeIPv4: String = MonitorOptions.defaultProbeIPv4, probeIPv6: String = MonitorOptions.defaultProbeIPv6,
        ignore: [String] = [], metered: [String] = [], kindOverrides: [(pattern: String, kind: InterfaceKind)] = [],
        receiveBufferSize: Int = 4 << 20, networkNamespace: String? = nil,
        resolvConf: String? = MonitorOptions.defaultResolvConf, nat64Prefix: String? = nil
    ) throws {
        probeAddresses = (try Self.probe(probeIPv4, family: .v4), try Self.probe(probeIPv6, family: .v6))
        configuredNAT64 = try nat64Prefix.map(Self.nat64)
        self.ignore = ignore
        self.metered = metered
        self.kindOverrides = kindOverrides
        self.receiveBufferSize = receiveBufferSize
        self.networkNamespace = networkNamespace
        self.resolvConf = resolvConf
    }

    /// The defaults: probes 198.41.0.4 and 2001:503:ba3e::2:30, nothing ignored.
    public init() {
        // The default probes are valid by construction.
        self = try! MonitorOptions(probeIPv4: Self.defaultProbeIPv4)
    }

    public static func == (lhs: MonitorOptions, rhs: MonitorOptions) -> Bool {
        lhs.probeAddresses == rhs.probeAddresses && lhs.kernel === rhs.kernel && lhs.ignore == rhs.ignore && lhs.metered == rhs.metered
            && lhs.kindOverrides.elementsEqual(rhs.kindOverrides, by: { $0.pattern == $1.pattern && $0.kind == $1.kind })
            && lhs.receiveBufferSize == rhs.receiveBufferSize && lhs.networkNamespace == rhs.networkNamespace
            && lhs.resolvConf == rhs.resolvConf && lhs.configuredNAT64 == rhs.configuredNAT64
    }

    func isIgnored(_ name: String) -> Bool { ignore.contains { Glob.matches($0, name) } }
    func isMetered(_ name: String) -> Bool { metered.contains { Glob.matches($0, name) } }

    private static func probe(_ text: String, family: IPAddress.Family) throws -> IPAddress {
        let key = family == .v4 ? "probe-ipv4" : "probe-ipv6"
        guard let address = IPAddress(text), address.family == family else {
            throw MonitorOptionsError("\(key) must be an \(family == .v4 ? "IPv4" : "IPv6") address, not \"\(text)\"")
        }
        guard !address.isLoopback, !address.isIPv6LinkLocal, address.bytes.contains(where: { $0 != 0 }) else {
            throw MonitorOptionsError("\(key) must be a global address (\(text) is not routed like Internet traffic)")
        }
        return address
    }

    private static func nat64(_ text: String) throws -> NAT64Prefix {
        guard let prefix = NAT64Prefix(text) else {
            throw MonitorOptionsError(
                "nat64-prefix must be an IPv6 prefix of length 32, 40, 48, 56, 64 or 96 with no bits set past it (RFC 6052), such as \"64:ff9b::/96\", not \"\(text)\""
            )
        }
        return prefix
    }
}

/// A bad monitor option; `description` is the one-line reason.
public struct MonitorOptionsError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension MonitorOptions {
    /// Reads the `[monitor]` table of a reachd.toml. Other tables are left to their owners.
    ///
    /// - Throws: an error whose description is `file:line: reason` for syntax errors,
    ///   unknown keys and bad values, `file: reason` when it cannot be read.
    public static func load(contentsOf file: String) throws -> MonitorOptions {
        let document = try TOML.parse(contentsOfFile: file)
        var root = TOMLTableReader(document, file: file, name: "")
        guard var monitor = try root.table("monitor") else { return MonitorOptions() }
        return try MonitorOptions(reading: &monitor)
    }

    /// Reads a `[monitor]` table, rejecting unknown keys.
    package init(reading table: inout TOMLTableReader) throws(TOMLError) {
        self.init()
        for (key, family) in [("probe-ipv4", IPAddress.Family.v4), ("probe-ipv6", .v6)] {
            guard let (text, line) = try table.string(key) else { continue }
            do {
                let address = try Self.probe(text, family: family)
                if family == .v4 { probeAddresses.v4 = address } else { probeAddresses.v6 = address }
            } catch {
                throw table.error("\(error)", line: line)
            }
        }
        if let (path, line) = try table.string("resolv-conf") {
            guard path.isEmpty || path.hasPrefix("/") else {
                throw table.error("resolv-conf must be an absolute path, or \"\" to follow no DNS, not \"\(path)\"", line: line)
            }
            resolvConf = path.isEmpty ? nil : path
        }
        if let (text, line) = try table.string("nat64-prefix") {
            do {
                configuredNAT64 = try Self.nat64(text)
            } catch {
                throw table.error("\(error)", line: line)
            }
        }
        ignore = try Self.globs("ignore", in: &table)
        metered = try Self.globs("metered", in: &table)
        if var kinds = try table.table("kind") {
            for pattern in kinds.table.keys {
                guard let (name, line) = try kinds.string(pattern) else { continue }
                guard let kind = InterfaceKind(rawValue: name) else {
                    let valid = InterfaceKind.allCases.map(\.rawValue).joined(separator: ", ")
                    throw kinds.error("kind of \(pattern) must be one of \(valid), not \"\(name)\"", line: line)
                }
                kindOverrides.append((pattern, kind))
            }
            try kinds.finish()
        }
        try table.finish()
    }

    private static func globs(_ key: String, in table: inout TOMLTableReader) throws(TOMLError) -> [String] {
        guard let entries = try table.strings(key) else { return [] }
        for (pattern, line) in entries where pattern.isEmpty || pattern.contains("/") {
            throw table.error("\(key): \"\(pattern)\" is not an interface name pattern", line: line)
        }
        return entries.map(\.value)
    }
}
