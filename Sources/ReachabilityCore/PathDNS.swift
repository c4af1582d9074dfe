extension Path {
    /// The resolvers the path can use (NWPath's `supportsDNS`, Android's
    /// `getDnsServers()`): the document's `dns` (docs/path.md, "DNS").
    public struct DNS: Codable, Sendable, Equatable {
        /// Where the servers were read.
        public enum Source: String, Codable, Sendable {
            /// systemd-resolved: over D-Bus (reachd), or the list it writes (in process).
            case resolved
            /// `/etc/resolv.conf` (or the file `[monitor] resolv-conf` names).
            case resolvConf = "resolv.conf"
            /// Nothing could be read: no resolv.conf, no resolved.
            case none
        }

        /// Where the servers were read.
        public var source: Source
        /// Every configured server, in the order of its source: "192.0.2.53",
        /// "2001:db8::53", and "ADDRESS%IFNAME" for one used only through that interface
        /// (resolved's per-link servers, link-local addresses).
        public var servers: [String]
        /// The servers this path can reach: the kernel routes to them through a usable
        /// interface (a per-link server through its own link), or they are local (a
        /// resolver on this host, whose own upstream is not seen).
        public var usable: [String]

        /// A DNS state.
        public init(source: Source, servers: [String], usable: [String]) {
            self.source = source
            self.servers = servers
            self.usable = usable
        }
    }

    /// Whether the path can resolve names: some configured server is usable by it
    /// (NWPath's `supportsDNS`). nil when the document carries no DNS state
    /// (a per-destination path, or one computed before the DNS was read).
    public var supportsDNS: Bool? { dns.map { !$0.usable.isEmpty } }
}
