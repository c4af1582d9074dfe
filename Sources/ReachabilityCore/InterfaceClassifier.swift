import Netlink

/// Decides what kind of device an interface is, in the order NetworkManager
/// and systemd use: a user override, then `IFLA_INFO_KIND`, then the ARPHRD
/// type, then (for Ethernet-typed devices) the device model's facts.
struct InterfaceClassifier: Sendable {
    let overrides: [(pattern: String, kind: InterfaceKind)]
    let facts: any InterfaceFactsSource

    /// USB network drivers that mean a modem or a tethered phone.
    static let cellularDrivers: Set<String> = [
        "qmi_wwan", "cdc_mbim", "huawei_cdc_ncm", "sierra_net", "mhi_net", "ipheth", "rndis_host",
        "cdc_subset_wwan", "option", "gobi", "GobiNet", "hso", "kalmia", "ipa", "mtk_t7xx", "iosm"
    ]
    /// Name prefixes of Qualcomm/MediaTek modem data channels.
    static let cellularNamePrefixes = ["rmnet", "ccmni", "wwan"]

    /// `IFLA_INFO_KIND` values and the kind they mean.
    static let kindsByLinkKind: [String: InterfaceKind] = [
        "veth": .veth, "bridge": .bridge, "bond": .bond, "team": .bond, "vlan": .vlan,
        "macvlan": .macvlan, "macvtap": .macvlan, "ipvlan": .macvlan, "ipvtap": .macvlan,
        "tun": .tunnel, "wireguard": .wireguard, "ipip": .tunnel, "gre": .tunnel, "gretap": .tunnel,
        "ip6gre": .tunnel, "ip6gretap": .tunnel, "sit": .tunnel, "ip6tnl": .tunnel, "vti": .tunnel,
        "vti6": .tunnel, "xfrm": .tunnel, "vxlan": .tunnel, "geneve": .tunnel, "erspan": .tunnel,
        "ip6erspan": .tunnel, "openvpn": .tunnel, "wwan": .cellular, "rmnet": .cellular,
        "ppp": .ppp, "dummy": .other, "ifb": .other, "vrf": .other, "nlmon": .other
    ]

    func kind(of link: Link) -> InterfaceKind {
        if let override = overrides.first(where: { Glob.matches($0.pattern, link.name) }) {
            return override.kind
        }
        if link.flags.contains(.loopback) || link.hardwareType == HardwareType.loopback { return .loopback }
        if let linkKind = link.kind, let kind = Self.kindsByLinkKind[linkKind] { return kind }
        switch link.hardwareType {
        case HardwareType.ppp:
            return .ppp
        case HardwareType.ieee80211, HardwareType.ieee80211Prism, HardwareType.ieee80211Radiotap:
            return .wifi
        case HardwareType.none, HardwareType.rawIP:
            // Raw-IP devices are tunnels, or WWAN modems in raw-IP mode.
            return isCellular(link.name, facts.facts(forInterfaceNamed: link.name)) ? .cellular : .tunnel
        case HardwareType.tunnel, HardwareType.tunnel6, HardwareType.sit, HardwareType.ipGRE, HardwareType.ip6GRE:
            return .tunnel
        case HardwareType.ether:
            let facts = facts.facts(forInterfaceNamed: link.name)
            if facts.deviceType == "wlan" || facts.isWireless { return .wifi }
            if isCellular(link.name, facts) { return .cellular }
            switch facts.deviceType {
            case "bridge": return .bridge
            case "bond": return .bond
            case "vlan": return .vlan
            default: return .ethernet
            }
        default:
            return .other
        }
    }

    private func isCellular(_ name: String, _ facts: InterfaceFacts) -> Bool {
        if facts.deviceType == "wwan" { return true }
        if let driver = facts.driver, Self.cellularDrivers.contains(driver) { return true }
        return Self.cellularNamePrefixes.contains { name.hasPrefix($0) }
    }
}
