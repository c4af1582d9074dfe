import CNetlink
import IPAddresses

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// A route was added or removed. Only enough to know that something changed:
/// the route table itself is never kept (a full BGP table is ~1M routes).
package struct RouteChange: Hashable, Sendable {
    package var family: IPAddress.Family
    package var table: UInt8
    /// The route's destination prefix (`RTA_DST`); nil for a default route, which has none.
    package var destination: IPAddress?
    package var destinationPrefixLength: UInt8
    package var type: UInt8
    package var removed: Bool
    /// The interfaces it leaves by (`RTA_OIF`, or each next hop's of `RTA_MULTIPATH`);
    /// empty for a route that names none (blackhole, unreachable).
    package var outputInterfaces: [Int32]

    package init(
        family: IPAddress.Family, table: UInt8, destination: IPAddress? = nil, destinationPrefixLength: UInt8,
        type: UInt8, removed: Bool, outputInterfaces: [Int32] = []
    ) {
        self.family = family
        self.table = table
        self.destination = destination
        self.destinationPrefixLength = destinationPrefixLength
        self.type = type
        self.removed = removed
        self.outputInterfaces = outputInterfaces
    }

    /// Whether it can carry traffic to a global address: IPv6 link-local and multicast
    /// routes (every interface gets them as it comes up) cannot.
    package var mayCarryGlobalTraffic: Bool {
        guard family == .v6, let bytes = destination?.bytes, destinationPrefixLength >= 8 else { return true }
        let multicast = bytes[0] == 0xFF
        let linkLocal = destinationPrefixLength >= 10 && bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 // fe80::/10
        return !multicast && !linkLocal
    }

    /// Whether the route's prefix contains `address`: a route that does not can
    /// change no lookup of it, whatever table or metric it has.
    package func covers(_ address: IPAddress) -> Bool {
        guard address.family == family else { return false }
        guard destinationPrefixLength > 0 else { return true }
        guard let destination else { return true } // a prefix without its address: assume it may
        var remaining = Int(destinationPrefixLength)
        for (own, other) in zip(destination.bytes, address.bytes) where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if own & mask != other & mask { return false }
            remaining -= bits
        }
        return true
    }
}

/// One rtnetlink message that matters to the path.
package enum RtnetlinkMessage: Sendable {
    case link(Link)
    case linkRemoved(index: Int32)
    case address(InterfaceAddress)
    case addressRemoved(InterfaceAddress)
    case route(RouteChange)
    /// A policy rule changed: the FIB may answer differently with no route message.
    case rule
    /// A next-hop object (`ip nexthop`) changed or went. Routes that name it (`nhid`)
    /// may now lead elsewhere, or be gone, with no route message: its removal never
    /// announces the IPv4 routes it takes, and with `net.ipv4.nexthop_compat_mode=0`
    /// no change announces any route.
    case nextHop
    /// An option of a router advertisement the kernel passed on (RFC 8910's captive portal among them).
    case routerOption(RouterAdvertisementOption)
}

extension RtnetlinkMessage {
    /// The interface of each `struct rtnexthop` in an `RTA_MULTIPATH` payload (length u16,
    /// flags u8, hops u8, ifindex i32, in host order, then its own attributes, each next hop 4-byte aligned).
    static func nextHopInterfaces(_ bytes: [UInt8]) -> [Int32] {
        var interfaces: [Int32] = []
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset + 8 <= raw.count {
                let length = Int(raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
                guard length >= 8 else { break }
                interfaces.append(raw.loadUnaligned(fromByteOffset: offset + 4, as: Int32.self))
                offset += (length + 3) & ~3
            }
        }
        return interfaces
    }

    /// Decodes one kernel message; nil for messages that do not describe state
    /// (and for `AF_INET6`/`AF_BRIDGE` link messages, which are not the link itself:
    /// they report carrier 0 while `IFF_LOWER_UP` is set).
    init?(_ header: UnsafeMutablePointer<nlmsghdr>) {
        switch header.pointee.nlmsg_type {
        case MessageType.newLink, MessageType.deleteLink:
            guard let info = header.payload(as: ifinfomsg.self), info.ifi_family == UInt8(AF_UNSPEC) else {
                return nil
            }
            if header.pointee.nlmsg_type == MessageType.deleteLink {
                self = .linkRemoved(index: info.ifi_index)
            } else {
                guard let link = Link(header) else { return nil }
                self = .link(link)
            }
        case MessageType.newAddress, MessageType.deleteAddress:
            guard let address = InterfaceAddress(header) else { return nil }
            self = header.pointee.nlmsg_type == MessageType.newAddress ? .address(address) : .addressRemoved(address)
        case MessageType.newRoute, MessageType.deleteRoute:
            guard let route = header.payload(as: rtmsg.self) else { return nil }
            let family: IPAddress.Family
            switch Int32(route.rtm_family) {
            case AF_INET: family = .v4
            case AF_INET6: family = .v6
            default: return nil
            }
            var destination: IPAddress?
            var outputInterfaces: [Int32] = []
            header.forEachAttribute(headerSize: MemoryLayout<rtmsg>.size) { attribute in
                switch attribute.type {
                case RouteAttribute.destination: destination = IPAddress(bytes: attribute.bytes)
                case RouteAttribute.outputInterface: outputInterfaces.append(Int32(bitPattern: attribute.u32))
                case RouteAttribute.multipath: outputInterfaces += Self.nextHopInterfaces(attribute.bytes)
                default: break
                }
            }
            self = .route(
                RouteChange(
                    family: family, table: route.rtm_table, destination: destination,
                    destinationPrefixLength: route.rtm_dst_len, type: route.rtm_type,
                    removed: header.pointee.nlmsg_type == MessageType.deleteRoute,
                    outputInterfaces: outputInterfaces))
        case MessageType.newRule, MessageType.deleteRule:
            self = .rule
        case MessageType.newNextHop, MessageType.deleteNextHop:
            self = .nextHop
        case MessageType.newNDUserOption:
            guard let option = RouterAdvertisementOption(header) else { return nil }
            self = .routerOption(option)
        default:
            return nil
        }
    }
}
