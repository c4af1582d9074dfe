import CNetlink

/// `IFF_*` flags of a link (`ifi_flags`).
package struct LinkFlags: OptionSet, Hashable, Sendable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    package static let up = LinkFlags(rawValue: 0x1)
    package static let loopback = LinkFlags(rawValue: 0x8)
    package static let pointToPoint = LinkFlags(rawValue: 0x10)
    package static let running = LinkFlags(rawValue: 0x40)
    package static let noARP = LinkFlags(rawValue: 0x80)
    /// The driver reports carrier (`IFF_LOWER_UP`).
    package static let lowerUp = LinkFlags(rawValue: 0x10000)
    package static let dormant = LinkFlags(rawValue: 0x20000)
}

/// RFC 2863 operational state (`IFLA_OPERSTATE`).
package enum OperationalState: UInt8, Hashable, Sendable, CustomStringConvertible {
    case unknown = 0, notPresent, down, lowerLayerDown, testing, dormant, up

    package var description: String {
        switch self {
        case .unknown: "unknown"
        case .notPresent: "notpresent"
        case .down: "down"
        case .lowerLayerDown: "lowerlayerdown"
        case .testing: "testing"
        case .dormant: "dormant"
        case .up: "up"
        }
    }
}

/// ARPHRD_* hardware types we tell apart.
package enum HardwareType {
    package static let ether: UInt16 = 1
    package static let infiniband: UInt16 = 32
    package static let ppp: UInt16 = 512
    package static let rawIP: UInt16 = 519
    package static let tunnel: UInt16 = 768
    package static let tunnel6: UInt16 = 769
    package static let loopback: UInt16 = 772
    package static let sit: UInt16 = 776
    package static let ipGRE: UInt16 = 778
    package static let ieee80211: UInt16 = 801
    package static let ieee80211Prism: UInt16 = 802
    package static let ieee80211Radiotap: UInt16 = 803
    package static let ip6GRE: UInt16 = 823
    package static let none: UInt16 = 0xFFFE
}

/// A network interface as the kernel describes it in an `AF_UNSPEC` link message.
package struct Link: Hashable, Sendable {
    package var index: Int32
    package var name: String
    /// `IFLA_INFO_KIND`: "veth", "bridge", "tun", "wireguard", … nil for plain hardware.
    package var kind: String?
    /// ARPHRD_* type.
    package var hardwareType: UInt16
    package var flags: LinkFlags
    package var operationalState: OperationalState
    /// `IFLA_MASTER`: the bridge or bond this link is enslaved to.
    package var masterIndex: Int32?
    /// `IFLA_LINK`: the lower device of a vlan/macvlan; for a veth, its peer.
    package var lowerIndex: Int32?
    package var mtu: UInt32

    package init(
        index: Int32, name: String, kind: String? = nil, hardwareType: UInt16 = HardwareType.ether,
        flags: LinkFlags = [.up, .running, .lowerUp], operationalState: OperationalState = .up,
        masterIndex: Int32? = nil, lowerIndex: Int32? = nil, mtu: UInt32 = 1500
    ) {
        self.index = index
        self.name = name
        self.kind = kind
        self.hardwareType = hardwareType
        self.flags = flags
        self.operationalState = operationalState
        self.masterIndex = masterIndex
        self.lowerIndex = lowerIndex
        self.mtu = mtu
    }

    /// Administratively up (`ip link set dev X up`).
    package var isUp: Bool { flags.contains(.up) }

    /// The link can carry packets: carrier present and not held down by its
    /// operational state (a Wi-Fi link that is not yet associated is `dormant`).
    package var hasCarrier: Bool {
        guard flags.contains(.lowerUp) else { return false }
        switch operationalState {
        case .down, .lowerLayerDown, .dormant, .notPresent: return false
        case .up, .unknown, .testing: return true
        }
    }

    /// Reads an `RTM_NEWLINK` message: the fixed `ifinfomsg`, then the attributes reachd uses.
    init?(_ header: UnsafeMutablePointer<nlmsghdr>) {
        guard let info = header.payload(as: ifinfomsg.self) else { return nil }
        var name: String?
        var kind: String?
        var operationalState = OperationalState.unknown
        var masterIndex: Int32?
        var lowerIndex: Int32?
        var mtu: UInt32 = 0
        header.forEachAttribute(headerSize: MemoryLayout<ifinfomsg>.size) { attribute in
            switch attribute.type {
            case LinkAttribute.name: name = attribute.string
            case LinkAttribute.mtu: mtu = attribute.u32
            case LinkAttribute.link: lowerIndex = Int32(bitPattern: attribute.u32)
            case LinkAttribute.master: masterIndex = Int32(bitPattern: attribute.u32)
            case LinkAttribute.operationalState: operationalState = attribute.u8.flatMap(OperationalState.init(rawValue:)) ?? .unknown
            case LinkAttribute.linkInfo:
                attribute.forEachNested { nested in
                    if nested.type == LinkAttribute.infoKind { kind = nested.string }
                }
            default: break
            }
        }
        self.init(
            index: info.ifi_index, name: name ?? "if\(info.ifi_index)", kind: kind, hardwareType: info.ifi_type,
            flags: LinkFlags(rawValue: info.ifi_flags), operationalState: operationalState,
            masterIndex: masterIndex.flatMap { $0 > 0 ? $0 : nil }, lowerIndex: lowerIndex.flatMap { $0 > 0 ? $0 : nil }, mtu: mtu)
    }
}
