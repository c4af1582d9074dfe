/// What kind of device an interface is (docs/path.md, "Interface kinds").
public enum InterfaceKind: String, Codable, Sendable, CaseIterable {
    /// `lo`: never carries a path.
    case loopback
    /// A wired Ethernet NIC.
    case ethernet
    /// A wireless LAN interface (nl80211 or wireless extensions).
    case wifi
    /// A modem: a WWAN or rmnet device, or a driver or name known to be one.
    case cellular
    /// A Linux bridge.
    case bridge
    /// A bonding or team device over other links.
    case bond
    /// An 802.1Q VLAN on another link.
    case vlan
    /// One end of a virtual Ethernet pair (containers).
    case veth
    /// A MACVLAN, MACVTAP, IPVLAN or IPVTAP on another link.
    case macvlan
    /// A tun, GRE, IPIP, SIT, VTI, XFRM or VXLAN tunnel, or OpenVPN's: a path through it is a VPN.
    case tunnel
    /// A WireGuard interface: a path through it is a VPN.
    case wireguard
    /// A PPP link (DSL, dial-up, some modems).
    case ppp
    /// Anything else the kernel reports.
    case other

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
