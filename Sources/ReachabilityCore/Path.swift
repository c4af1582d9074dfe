import FoundationEssentials

/// The network path: what reachd publishes, `reachctl status --json` prints,
/// and D-Bus `Describe()` returns. Encodes to exactly the path document of docs/reachctl.md and docs/api.md.
public struct Path: Codable, Sendable, Equatable {
    /// An interface named in the document.
    public struct Interface: Codable, Sendable, Equatable {
        /// The kernel's name for it: `eth0`, `wlan0`, `wg0`.
        public var name: String
        /// The kernel's interface index (`ip link`'s number), stable while the interface exists.
        public var index: Int
        /// What kind of device it is.
        public var kind: InterfaceKind

        /// An interface of the document, as the monitor names it.
        public init(name: String, index: Int, kind: InterfaceKind) {
            self.name = name
            self.index = index
            self.kind = kind
        }
    }

    /// One entry of `interfaces`: every interface that is not ignored.
    public struct InterfaceState: Codable, Sendable, Equatable {
        /// The kernel's name for it.
        public var name: String
        /// The kernel's interface index.
        public var index: Int
        /// What kind of device it is.
        public var kind: InterfaceKind
        /// RFC 2863 operational state: up, down, lowerlayerdown, dormant, unknown, …
        public var operstate: String
        /// Administratively up.
        public var up: Bool
        /// The link layer is connected: a cable in, a Wi-Fi association, a tunnel with its process.
        public var carrier: Bool
        /// "192.0.2.10/24", "2001:db8::10/64": IPv4 first. Tentative (DAD still running) and
        /// DAD-failed addresses are left out: they cannot be used, and the kernel announces
        /// them only when DAD ends, so listing them would depend on when one looked.
        public var addresses: [String]
        /// This way out's own verdict (docs/connectivity.md, "Every way out"): the probe's
        /// answer over this interface alone. nil for the path's own interface (its verdict is
        /// the path's `connectivity`: ``Path/connectivity(of:)`` says either), and where nothing
        /// judged it: no probe is configured, it is a tunnel, the path goes through a VPN, or
        /// the document is not reachd's.
        public var connectivity: Connectivity?

        /// One interface's state, as the monitor reports it.
        public init(
            name: String, index: Int, kind: InterfaceKind, operstate: String, up: Bool, carrier: Bool, addresses: [String],
            connectivity: Connectivity? = nil
        ) {
            self.name = name
            self.index = index
            self.kind = kind
            self.operstate = operstate
            self.up = up
            self.carrier = carrier
            self.addresses = addresses
            self.connectivity = connectivity
        }

        enum CodingKeys: String, CodingKey { case name, index, kind, operstate, up, carrier, addresses, connectivity }

        /// Writes every key, `connectivity` as `null` when not judged.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(index, forKey: .index)
            try container.encode(kind, forKey: .kind)
            try container.encode(operstate, forKey: .operstate)
            try container.encode(up, forKey: .up)
            try container.encode(carrier, forKey: .carrier)
            try container.encode(addresses, forKey: .addresses)
            try container.encode(connectivity, forKey: .connectivity)
        }
    }

    /// The kernel's answer for one probed address.
    public struct Route: Codable, Sendable, Equatable {
        /// The probe (or resolved destination) address.
        public var destination: String
        /// The medium of the interface the kernel picked, or `unreachable`.
        public var status: ReachabilityStatus
        /// Why there is no path, when `status` is `unreachable`.
        public var reason: UnreachableReason?
        /// The interface the kernel picked (a tunnel, if it picked one).
        public var interface: String?
        /// The next hop, when the route has one.
        public var gateway: String?
        /// The source address the kernel would use.
        public var source: String?
        /// For an IPv4 destination with no IPv4 route, reached through the network's
        /// NAT64: the synthesised IPv6 address the kernel routed ("64:ff9b::c000:201").
        public var nat64: String?

        /// One probed address's route, as the kernel answered.
        public init(
            destination: String, status: ReachabilityStatus, reason: UnreachableReason? = nil,
            interface: String? = nil, gateway: String? = nil, source: String? = nil, nat64: String? = nil
        ) {
            self.destination = destination
            self.status = status
            self.reason = reason
            self.interface = interface
            self.gateway = gateway
            self.source = source
            self.nat64 = nat64
        }
    }

    /// What the path is: `wifi`, `wired`, `cellular`, `unreachable`, or `unknown`.
    public var status: ReachabilityStatus
    /// Set only when `status` is `unreachable`.
    public var reason: UnreachableReason?
    /// The interface that carries the path (under a VPN, the one the tunnel rides on).
    public var interface: Interface?
    /// Next hop; nil for on-link and point-to-point paths. IPv6 link-local gateways carry their zone ("fe80::1%eth0").
    public var gateway: String?
    /// The IPv4 probe has a usable path.
    public var ipv4: Bool
    /// The IPv6 probe has a usable path.
    public var ipv6: Bool
    /// Cellular, or marked metered in the config.
    public var expensive: Bool
    /// The tunnel the kernel routes the probe through, if any.
    public var vpn: Interface?
    /// Every interface that is not ignored, in index order.
    public var interfaces: [InterfaceState]
    /// The trust checker's overall verdict for the configured hosts (`none` without any).
    public var trust: TrustSummary
    /// Whether the path reaches the Internet (docs/connectivity.md).
    public var connectivity: Connectivity
    /// When `connectivity` is `portal`: the login page, if the probe was redirected to one.
    public var portal: String?
    /// True on the first document a subscriber receives.
    public var initial: Bool
    /// When this status began.
    public var since: Date
    /// Which network namespace the path describes: the caller's own or a named one.
    public var source: PathSource
    /// For per-destination monitors: the host name or address asked about; nil for the default path.
    public var destination: String?
    /// The kernel's lookups behind this path, one per probed address.
    public var routes: [Route]
    /// The resolvers configured, and those this path can reach (the default path's
    /// document; nil elsewhere).
    public var dns: DNS?
    /// The network's captive-portal API and its answer (the default path's document,
    /// from reachd only; nil when no API is known).
    public var capport: CaptivePortal?
    /// The CLAT that gives this IPv6-only path its IPv4 (464XLAT), when the kernel
    /// routes IPv4 through one: not a VPN (`vpn` stays nil), and `interface` is the
    /// IPv6 uplink it rides on.
    public var clat: Interface?
    /// The network's NAT64 prefix, when one is known for the path's interface.
    public var nat64: NAT64?

    /// A path document; everything but the status has the value of an unreachable path.
    public init(
        status: ReachabilityStatus, reason: UnreachableReason? = nil, interface: Interface? = nil,
        gateway: String? = nil, ipv4: Bool = false, ipv6: Bool = false, expensive: Bool = false,
        vpn: Interface? = nil, interfaces: [InterfaceState] = [], trust: TrustSummary = .none,
        connectivity: Connectivity = .unknown, portal: String? = nil, initial: Bool = false, since: Date = Date(),
        source: PathSource = .direct,
        destination: String? = nil, routes: [Route] = [], dns: DNS? = nil, capport: CaptivePortal? = nil,
        clat: Interface? = nil, nat64: NAT64? = nil
    ) {
        self.status = status
        self.reason = reason
        self.interface = interface
        self.gateway = gateway
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.expensive = expensive
        self.vpn = vpn
        self.interfaces = interfaces
        self.trust = trust
        self.connectivity = connectivity
        self.portal = portal
        self.initial = initial
        self.since = since
        self.source = source
        self.destination = destination
        self.routes = routes
        self.dns = dns
        self.capport = capport
        self.clat = clat
        self.nat64 = nat64
    }

    /// The honest answer before anything is known.
    public static func unknown(since: Date = Date(), source: PathSource = .direct, destination: String? = nil) -> Path {
        Path(status: .unknown, since: since, source: source, destination: destination)
    }

    /// Same path, ignoring when it began and whether it is someone's first:
    /// publishing a document that only differs there would be noise.
    public func isSamePath(as other: Path) -> Bool {
        var copy = other
        copy.since = since
        copy.initial = initial
        return copy == self
    }

    /// Whether packets would leave the same way: the same status, interface, next hop,
    /// tunnel and families. Connectivity is probed again when this changes, not when
    /// an unrelated interface gains an address.
    public func leavesTheSameWay(as other: Path) -> Bool {
        status == other.status && interface == other.interface && gateway == other.gateway && vpn == other.vpn
            && ipv4 == other.ipv4 && ipv6 == other.ipv6 && clat == other.clat
    }

    enum CodingKeys: String, CodingKey {
        case status, reason, interface, gateway, ipv4, ipv6, expensive, vpn, interfaces, trust, connectivity, portal, initial, since,
            source,
            destination, routes, dns, capport, ipv4Via = "ipv4-via", clat, nat64, betterWayOut = "better-way-out"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        status = try container.decode(ReachabilityStatus.self, forKey: .status)
        reason = try container.decodeIfPresent(UnreachableReason.self, forKey: .reason)
        interface = try container.decodeIfPresent(Interface.self, forKey: .interface)
        gateway = try container.decodeIfPresent(String.self, forKey: .gateway)
        ipv4 = try container.decode(Bool.self, forKey: .ipv4)
        ipv6 = try container.decode(Bool.self, forKey: .ipv6)
        expensive = try container.decode(Bool.self, forKey: .expensive)
        vpn = try container.decodeIfPresent(Interface.self, forKey: .vpn)
        interfaces = try container.decodeIfPresent([InterfaceState].self, forKey: .interfaces) ?? []
        trust = try container.decodeIfPresent(TrustSummary.self, forKey: .trust) ?? .none
        connectivity = try container.decodeIfPresent(Connectivity.self, forKey: .connectivity) ?? .unknown
        portal = try container.decodeIfPresent(String.self, forKey: .portal)
        initial = try container.decodeIfPresent(Bool.self, forKey: .initial) ?? false
        let sinceText = try container.decode(String.self, forKey: .since)
        guard let parsed = UTCTimestamp.parse(sinceText) else {
            throw DecodingError.dataCorruptedError(forKey: .since, in: container, debugDescription: "not ISO 8601: \(sinceText)")
        }
        since = parsed
        source = try container.decodeIfPresent(PathSource.self, forKey: .source) ?? .direct
        destination = try container.decodeIfPresent(String.self, forKey: .destination)
        routes = try container.decodeIfPresent([Route].self, forKey: .routes) ?? []
        dns = try container.decodeIfPresent(DNS.self, forKey: .dns)
        capport = try container.decodeIfPresent(CaptivePortal.self, forKey: .capport)
        clat = try container.decodeIfPresent(Interface.self, forKey: .clat)
        nat64 = try container.decodeIfPresent(NAT64.self, forKey: .nat64)
    }

    /// Every documented key is always present; absent values are `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encode(reason, forKey: .reason)
        try container.encode(interface, forKey: .interface)
        try container.encode(gateway, forKey: .gateway)
        try container.encode(ipv4, forKey: .ipv4)
        try container.encode(ipv6, forKey: .ipv6)
        try container.encode(expensive, forKey: .expensive)
        try container.encode(vpn, forKey: .vpn)
        try container.encode(interfaces, forKey: .interfaces)
        try container.encode(trust, forKey: .trust)
        try container.encode(connectivity, forKey: .connectivity)
        try container.encode(portal, forKey: .portal)
        try container.encode(initial, forKey: .initial)
        try container.encode(UTCTimestamp.format(since), forKey: .since)
        try container.encode(source, forKey: .source)
        try container.encode(destination, forKey: .destination)
        try container.encode(routes, forKey: .routes)
        try container.encode(dns, forKey: .dns)
        try container.encode(capport, forKey: .capport)
        try container.encode(ipv4Via, forKey: .ipv4Via)
        try container.encode(clat, forKey: .clat)
        try container.encode(nat64, forKey: .nat64)
        try container.encode(betterWayOut, forKey: .betterWayOut)
    }

    /// The document as one line of JSON, keys in the documented order (docs/reachctl.md). The same
    /// document as `Codable` encodes, written directly.
    public func jsonString() -> String {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.text
    }

    /// `jsonString()` and a newline, as UTF-8: a line of `reachctl watch --json`, written
    /// without a `String` in between.
    package func jsonLine() -> [UInt8] {
        var bytes: [UInt8] = []
        jsonLine(into: &bytes)
        return bytes
    }

    /// `jsonLine()` written over `bytes`, in the memory they already have: a watcher that
    /// keeps one buffer allocates and frees nothing per line (BENCHMARKS.md §32).
    package func jsonLine(into bytes: inout [UInt8]) {
        var writer = JSONWriter(reusing: &bytes)
        write(to: &writer)
        writer.newline()
        bytes = writer.bytes
    }

    /// Whether two documents the same daemon wrote have the same path (`Path.isSamePath(as:)`):
    /// the same text but for `"initial":…,"since":"…"`. Nil when either does not have them as
    /// `write(to:)` writes them: a document `reachctl watch --json` passes on is compared
    /// as text (`ReachabilityClient`'s document follow). Read as bytes: the standard library's generic
    /// substring search cost five times the decoding it replaces.
    package static func sameDocumentPath(_ one: String, _ other: String) -> Bool? {
        var (one, other) = (one, other)
        return one.withUTF8 { one in
            other.withUTF8 { other in
                guard let skipped = initialAndSince(in: one), let otherSkipped = initialAndSince(in: other) else { return nil }
                return one[..<skipped.lowerBound].elementsEqual(other[..<otherSkipped.lowerBound])
                    && one[skipped.upperBound...].elementsEqual(other[otherSkipped.upperBound...])
            }
        }
    }

    /// Where `"initial":` begins in `text`, to the closing quote of the `"since"` that follows it.
    private static func initialAndSince(in text: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        func matches(_ literal: StaticString, at offset: Int) -> Bool {
            literal.withUTF8Buffer { literal in
                offset + literal.count <= text.count && text[offset..<offset + literal.count].elementsEqual(literal)
            }
        }
        guard let start = text.indices.first(where: { text[$0] == UInt8(ascii: "\"") && matches("\"initial\":", at: $0) }) else {
            return nil
        }
        var offset = start
        func skip(_ literal: StaticString) -> Bool {
            guard matches(literal, at: offset) else { return false }
            offset += literal.utf8CodeUnitCount
            return true
        }
        guard skip("\"initial\":"), skip("false") || skip("true"), skip(",\"since\":\""),
            let end = text[offset...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        return start..<end
    }

    private func write(to writer: inout JSONWriter) {
        writer.object { document in
            document.string("status", status.rawValue)
            document.string("reason", reason?.rawValue)
            document.object("interface", interface != nil) { $0.write(interface!) }
            document.string("gateway", gateway)
            document.bool("ipv4", ipv4)
            document.bool("ipv6", ipv6)
            document.bool("expensive", expensive)
            document.object("vpn", vpn != nil) { $0.write(vpn!) }
            document.array("interfaces", interfaces) { entry, state in
                entry.string("name", state.name)
                entry.int("index", state.index)
                entry.string("kind", state.kind.rawValue)
                entry.string("operstate", state.operstate)
                entry.bool("up", state.up)
                entry.bool("carrier", state.carrier)
                entry.strings("addresses", state.addresses)
                entry.string("connectivity", state.connectivity?.rawValue)
            }
            document.string("trust", trust.rawValue)
            document.string("connectivity", connectivity.rawValue)
            document.string("portal", portal)
            document.bool("initial", initial)
            document.timestamp("since", since)
            document.string("source", source.rawValue)
            document.string("destination", destination)
            document.array("routes", routes) { entry, route in
                entry.string("destination", route.destination)
                entry.string("status", route.status.rawValue)
                entry.string("reason", route.reason?.rawValue)
                entry.string("interface", route.interface)
                entry.string("gateway", route.gateway)
                entry.string("source", route.source)
                entry.string("nat64", route.nat64)
            }
            document.object("dns", dns != nil) { entry in
                entry.string("source", dns!.source.rawValue)
                entry.strings("servers", dns!.servers)
                entry.strings("usable", dns!.usable)
            }
            document.object("capport", capport != nil) { capport!.write(&$0) }
            document.string("ipv4-via", ipv4Via.rawValue)
            document.object("clat", clat != nil) { $0.write(clat!) }
            document.object("nat64", nat64 != nil) { nat64!.write(&$0) }
            document.string("better-way-out", betterWayOut)
        }
    }

    /// Reads a document written by `jsonString()` (or by reachd). It reads what
    /// Foundation's `JSONDecoder` reads, to the same value, but refuses a document
    /// nested deeper than 64 levels (a path nests 4).
    public init(json: String) throws {
        self = try JSONReader.decode(Path.self, from: json)
    }
}

extension Path.Route {
    enum CodingKeys: String, CodingKey { case destination, status, reason, interface, gateway, source, nat64 }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(destination, forKey: .destination)
        try container.encode(status, forKey: .status)
        try container.encode(reason, forKey: .reason)
        try container.encode(interface, forKey: .interface)
        try container.encode(gateway, forKey: .gateway)
        try container.encode(source, forKey: .source)
        try container.encode(nat64, forKey: .nat64)
    }
}

private extension JSONWriter.ObjectWriter {
    mutating func write(_ interface: Path.Interface) {
        string("name", interface.name)
        int("index", interface.index)
        string("kind", interface.kind.rawValue)
    }
}
