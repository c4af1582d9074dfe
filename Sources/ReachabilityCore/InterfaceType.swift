/// The medium a path leaves by, in NWInterface.InterfaceType's sense: what a
/// monitor can be restricted to (``ReachabilityMonitor/init(requiredInterfaceType:target:options:connectivity:)``)
/// and what ``Path/uses(_:)`` asks. Under a VPN it is the medium the tunnel rides on.
public enum InterfaceType: String, Codable, Sendable, CaseIterable, Comparable {
    /// A wireless LAN.
    case wifi
    /// A wired (or virtual wired) link: Ethernet, a bridge, a bond, a VLAN, loopback.
    case wired
    /// A cellular modem.
    case cellular

    /// The path's type, for a reachable status; nil for `unknown` and `unreachable`.
    public init?(_ status: ReachabilityStatus) {
        self.init(rawValue: status.rawValue)
    }

    /// The order the kinds are written in (D-Bus arguments, keys): wifi, wired, cellular.
    public static func < (lhs: InterfaceType, rhs: InterfaceType) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// Reads a comma-separated list such as `"wifi,wired"` (the form `WatchPath()`
    /// takes, docs/api.md); the empty string is every type.
    /// - Throws: ``MonitorOptionsError`` naming the word that is not a type.
    public static func parseList(_ text: String) throws(MonitorOptionsError) -> Set<InterfaceType> {
        guard !text.isEmpty else { return Set(allCases) }
        var types: Set<InterfaceType> = []
        for word in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let type = InterfaceType(rawValue: String(word)) else {
                throw MonitorOptionsError("\"\(word)\" is not an interface type (wifi, wired, cellular)")
            }
            types.insert(type)
        }
        return types
    }

    /// The list form of `types`, in the canonical order: `""` for all of them.
    public static func listText(_ types: Set<InterfaceType>) -> String {
        types.count == allCases.count ? "" : types.sorted().map(\.rawValue).joined(separator: ",")
    }
}

extension Medium {
    var interfaceType: InterfaceType {
        switch self {
        case .wifi: .wifi
        case .wired: .wired
        case .cellular: .cellular
        }
    }
}
