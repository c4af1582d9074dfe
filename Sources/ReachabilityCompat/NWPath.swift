import FoundationEssentials
import IPAddresses
import ReachabilityClient
import SystemCalls

/// Apple's `NWPath` (the Network framework), made from a reachd `Path`: the same
/// properties and methods, so code written for `NWPathMonitor` compiles with
/// `import ReachabilityCompat` (docs/swift-libraries.md, "NWPathMonitor"). Where
/// Linux differs, it says so here.
public struct NWPath: Equatable, Sendable, CustomDebugStringConvertible {
    /// Whether the path can be used.
    public enum Status: Equatable, Sendable {
        /// The path leaves by Wi-Fi, a wired link or a modem (reachd's `wifi`, `wired`, `cellular`).
        case satisfied
        /// No usable path (reachd's `unreachable`, with its reason in ``reachdPath``).
        case unsatisfied
        /// reachd cannot say yet (its `unknown`: the kernel's state is being read again,
        /// or a watched host has not resolved): not usable now, and a connection may still work.
        case requiresConnection
    }

    /// Why a path is unsatisfied. Linux has no per-app policy that denies a medium:
    /// an unsatisfied path is always `notAvailable`.
    public enum UnsatisfiedReason: Equatable, Sendable {
        /// No reason, or the path is satisfied.
        case notAvailable
        /// The user denied cellular data (never on Linux).
        case cellularDenied
        /// The user denied Wi-Fi (never on Linux).
        case wifiDenied
        /// The user denied the local network (never on Linux).
        case localNetworkDenied
        /// A required VPN is not active (never on Linux).
        case vpnInactive
    }

    /// Whether the path can be used.
    public let status: Status
    /// Why it cannot: `notAvailable` on Linux.
    public let unsatisfiedReason: UnsatisfiedReason
    /// The interfaces that could carry a path, by preference (reachd's `availableInterfaces`).
    public let availableInterfaces: [NWInterface]
    /// A cellular path, or one on an interface configured as metered (`[monitor] metered`).
    public let isExpensive: Bool
    /// Low Data Mode does not exist on Linux: always false.
    public let isConstrained: Bool
    /// The path has IPv4 (native, or through a CLAT).
    public let supportsIPv4: Bool
    /// The path has IPv6.
    public let supportsIPv6: Bool
    /// A configured DNS server can be reached by the path.
    public let supportsDNS: Bool
    /// The next hops, IPv4 first, each with port 0.
    public let gateways: [NWEndpoint]
    /// The connection's endpoints, which a path monitor never has: nil.
    public let localEndpoint: NWEndpoint? = nil
    /// The connection's endpoints, which a path monitor never has: nil.
    public let remoteEndpoint: NWEndpoint? = nil
    /// reachd's whole answer: the reason, the VPN, the CLAT, connectivity, trust (reachd's own addition).
    public let reachdPath: Path

    /// The NWPath of a reachd path.
    public init(_ path: Path) {
        reachdPath = path
        switch path.status {
        case .wifi, .wired, .cellular: status = .satisfied
        case .unreachable: status = .unsatisfied
        case .unknown: status = .requiresConnection
        }
        unsatisfiedReason = .notAvailable
        availableInterfaces = path.availableInterfaces.map { NWInterface(name: $0.name, index: $0.index, kind: $0.kind) }
        isExpensive = path.expensive
        isConstrained = false
        supportsIPv4 = path.ipv4
        supportsIPv6 = path.ipv6
        supportsDNS = path.supportsDNS ?? false
        gateways = path.gateways.compactMap { NWEndpoint.Host(gateway: $0, among: path.interfaces) }.map { .hostPort(host: $0, port: .any) }
    }

    /// Whether the path uses an interface of `type`: under a VPN, both the medium it rides on
    /// and `.other` (Apple reports a tunnel as `.other`).
    public func usesInterfaceType(_ type: NWInterface.InterfaceType) -> Bool {
        switch type {
        case .wifi: reachdPath.uses(.wifi)
        case .wiredEthernet: reachdPath.uses(.wired) && reachdPath.interface?.kind != .loopback
        case .cellular: reachdPath.uses(.cellular)
        case .loopback: reachdPath.interface?.kind == .loopback
        case .other: reachdPath.usesVPN
        }
    }

    /// The status and the interfaces, as Apple's `debugDescription` gives them.
    public var debugDescription: String {
        let names = availableInterfaces.map(\.name).joined(separator: ", ")
        return "\(status), interfaces: [\(names)]\(isExpensive ? ", expensive" : "") (reachd: \(reachdPath))"
    }

    /// Two paths are equal when everything above is; reachd's document may differ
    /// in what NWPath does not show (addresses, connectivity, `since`).
    public static func == (lhs: NWPath, rhs: NWPath) -> Bool {
        (lhs.status, lhs.isExpensive, lhs.supportsIPv4, lhs.supportsIPv6, lhs.supportsDNS) == (
            rhs.status, rhs.isExpensive, rhs.supportsIPv4, rhs.supportsIPv6, rhs.supportsDNS
        )
            && lhs.availableInterfaces == rhs.availableInterfaces && lhs.gateways == rhs.gateways
            && lhs.reachdPath.usesVPN == rhs.reachdPath.usesVPN && lhs.reachdPath.interface == rhs.reachdPath.interface
    }
}

/// Apple's `NWInterface`: one network interface.
public struct NWInterface: Hashable, Sendable, CustomDebugStringConvertible {
    /// The medium, in Apple's words.
    public enum InterfaceType: Hashable, Sendable {
        /// A tunnel (WireGuard, OpenVPN's tun, a CLAT), or anything else.
        case other
        /// A wireless LAN.
        case wifi
        /// A modem.
        case cellular
        /// Ethernet, and Linux's virtual wired links: a bridge, a bond, a VLAN, a veth.
        case wiredEthernet
        /// `lo`.
        case loopback
    }

    /// The medium.
    public let type: InterfaceType
    /// The kernel's name: `eth0`, `wlan0`.
    public let name: String
    /// The kernel's interface index.
    public let index: Int

    init(name: String, index: Int, kind: InterfaceKind) {
        self.name = name
        self.index = index
        type =
            switch kind.interfaceType {
            case _ where kind == .loopback: .loopback
            case .wired?: .wiredEthernet
            case .wifi?: .wifi
            case .cellular?: .cellular
            case nil: .other
            }
    }

    /// The name.
    public var debugDescription: String { name }
}

/// Apple's `NWEndpoint`, as far as a path has endpoints: its gateways.
public enum NWEndpoint: Hashable, Sendable, CustomDebugStringConvertible {
    /// A host and a port.
    case hostPort(host: Host, port: Port)

    /// A host: a name or an address.
    public enum Host: Hashable, Sendable, CustomDebugStringConvertible {
        /// A host name, and the interface it is scoped to.
        case name(String, NWInterface?)
        /// An IPv4 address.
        case ipv4(IPv4Address)
        /// An IPv6 address.
        case ipv6(IPv6Address)

        /// A gateway of the document ("192.0.2.1", "fe80::1%eth0"), its zone the interface among `interfaces`.
        init?(gateway: String, among interfaces: [Path.InterfaceState]) {
            let parts = gateway.split(separator: "%", maxSplits: 1).map(String.init)
            let zone = parts.count == 2 ? interfaces.first { $0.name == parts[1] } : nil
            let interface = zone.map { NWInterface(name: $0.name, index: $0.index, kind: $0.kind) }
            if let address = IPv4Address(parts[0]) {
                self = .ipv4(address)
            } else if let address = IPv6Address(parts[0], interface) {
                self = .ipv6(address)
            } else {
                return nil
            }
        }

        /// The address or the name, as written.
        public var debugDescription: String {
            switch self {
            case let .name(name, _): name
            case let .ipv4(address): address.debugDescription
            case let .ipv6(address): address.debugDescription
            }
        }
    }

    /// A port number.
    public struct Port: Hashable, Sendable, RawRepresentable, ExpressibleByIntegerLiteral {
        /// The number.
        public let rawValue: UInt16
        /// Any port: 0.
        public static let any = Port(rawValue: 0)
        /// A port of that number.
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// A port of that number.
        public init(integerLiteral value: UInt16) { rawValue = value }
    }

    /// "192.0.2.1:0".
    public var debugDescription: String {
        switch self {
        case let .hostPort(host, port): "\(host.debugDescription):\(port.rawValue)"
        }
    }
}

/// Apple's `IPv4Address`.
public struct IPv4Address: Hashable, Sendable, CustomDebugStringConvertible {
    /// The four bytes, in network order.
    public let rawValue: Data
    /// The interface it is scoped to, if any.
    public let interface: NWInterface?

    /// The address written in dotted quads; nil for anything else.
    public init?(_ string: String, _ interface: NWInterface? = nil) {
        guard let address = IPAddress(string), address.family == .v4 else { return nil }
        rawValue = Data(address.bytes)
        self.interface = interface
    }

    /// "192.0.2.1".
    public var debugDescription: String { IPAddress(bytes: Array(rawValue)).map { "\($0)" } ?? "" }
}

/// Apple's `IPv6Address`.
public struct IPv6Address: Hashable, Sendable, CustomDebugStringConvertible {
    /// The sixteen bytes, in network order.
    public let rawValue: Data
    /// The interface a link-local address is scoped to.
    public let interface: NWInterface?

    /// The address in RFC 4291 text; nil for anything else.
    public init?(_ string: String, _ interface: NWInterface? = nil) {
        guard let address = IPAddress(string), address.family == .v6 else { return nil }
        rawValue = Data(address.bytes)
        self.interface = interface
    }

    /// "fe80::1%eth0".
    public var debugDescription: String {
        (IPAddress(bytes: Array(rawValue)).map { "\($0)" } ?? "") + (interface.map { "%\($0.name)" } ?? "")
    }
}
