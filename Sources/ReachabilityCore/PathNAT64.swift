extension Path {
    /// The network's NAT64 (RFC 6146), which lets an IPv6-only host reach IPv4 servers
    /// through IPv6 addresses synthesised in its prefix (RFC 6052): the document's `nat64`
    /// (docs/path.md, "IPv6-only networks: NAT64 and CLAT"). Android's
    /// `LinkProperties.getNat64Prefix()`, networkd's PREF64.
    public struct NAT64: Codable, Sendable, Equatable {
        /// Where the prefix was learnt, strongest first.
        public enum Source: String, Codable, Sendable, CaseIterable {
            /// `[monitor] nat64-prefix` in the config: it wins over what the network says.
            case config
            /// RFC 8781's PREF64 option (38) of an IPv6 router advertisement on the path's interface.
            case routerAdvertisement = "router-advertisement"
            /// RFC 7050: the path's resolvers answered `ipv4only.arpa` with a synthesised
            /// address (DNS64), where no router announced a prefix. reachd only.
            case dns64
        }

        /// "64:ff9b::/96": the prefix, with its length (32, 40, 48, 56, 64 or 96).
        public var prefix: String
        /// Where it was learnt.
        public var source: Source
        /// The interface it was learnt on (nil for the config's).
        public var interface: String?
        /// The lifetime the router announced, in seconds: the prefix stops holding when that
        /// long passes without another advertisement (router advertisements only; a DNS64
        /// answer and the config have none). A lifetime rather than an end, so that each
        /// advertisement that repeats the prefix changes nothing a subscriber is sent.
        public var lifetime: Int?

        /// A NAT64 as reachd publishes it.
        public init(prefix: String, source: Source, interface: String? = nil, lifetime: Int? = nil) {
            self.prefix = prefix
            self.source = source
            self.interface = interface
            self.lifetime = lifetime
        }

        enum CodingKeys: String, CodingKey { case prefix, source, interface, lifetime }

        /// Writes it as the document does: every key, `null` where absent.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(prefix, forKey: .prefix)
            try container.encode(source, forKey: .source)
            try container.encode(interface, forKey: .interface)
            try container.encode(lifetime, forKey: .lifetime)
        }

        func write(_ object: inout JSONWriter.ObjectWriter) {
            object.string("prefix", prefix)
            object.string("source", source.rawValue)
            object.string("interface", interface)
            object.optionalInt("lifetime", lifetime)
        }
    }

    /// Where the path's IPv4 comes from: the document's `ipv4-via`.
    public enum IPv4Via: String, Codable, Sendable, CaseIterable {
        /// The network's own IPv4: an address and a route of its own.
        case native
        /// A CLAT on this host (464XLAT, RFC 6877) translates IPv4 into IPv6 towards the
        /// network's NAT64: IPv4 works, literals and old sockets included.
        case clat
        /// No IPv4 of its own, but the network's NAT64 reaches IPv4 servers by name (DNS64)
        /// or through synthesised addresses (`Route()` of an IPv4 literal).
        case nat64
        /// No IPv4 at all.
        case none
    }

    /// Where IPv4 comes from on this path (docs/path.md, "IPv6-only networks: NAT64 and CLAT").
    public var ipv4Via: IPv4Via {
        if ipv4 { return clat == nil ? .native : .clat }
        let throughNAT64 = routes.contains { $0.nat64 != nil }
        return nat64 != nil && (ipv6 || throughNAT64) ? .nat64 : .none
    }
}
