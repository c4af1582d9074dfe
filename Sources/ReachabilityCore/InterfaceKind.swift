/// What kind of device an interface is (CONTRACT.md's interface kinds).
public enum InterfaceKind: String, Codable, Sendable, CaseIterable {
    case loopback, ethernet, wifi, cellular, bridge, bond, vlan, veth, macvlan, tunnel, wireguard, ppp, other

    /// The path through a tunnel is a VPN.
    public var isTunnel: Bool { self == .tunnel || self == .wireguard }
}

/// The physical medium a status reports.
enum Medium: Sendable {
    case wifi, wired, cellular

    var status: ReachabilityStatus {
        switch self {
        case .wifi: .wifi
        case .wired: .wired
        case .cellular: .cellular
        }
    }

    /// Which medium a stacked device reports when its members differ.
    var preference: Int {
        switch self {
        case .wired: 0
        case .wifi: 1
        case .cellular: 2
        }
    }
}
