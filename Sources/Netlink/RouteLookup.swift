import CNetlink
import IPAddresses

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// The kernel's answer to "which way would a packet to this address go?".
package struct RouteLookup: Hashable, Sendable {
    package var destination: IPAddress
    package var outputInterface: Int32
    package var gateway: IPAddress?
    package var preferredSource: IPAddress?
    /// `RTN_*`: unicast, local, …
    package var type: UInt8
    package var table: UInt32
    /// For FIB-match lookups: the prefix length of the route that matched (0 = default).
    package var destinationPrefixLength: UInt8
    /// The route's metric, when the kernel reports one (FIB-match lookups).
    package var priority: UInt32?
    /// The next-hop object the route names (`nhid`, `RTA_NH_ID`), if it names one.
    package var nextHopObject: UInt32?

    package init(
        destination: IPAddress, outputInterface: Int32, gateway: IPAddress? = nil, preferredSource: IPAddress? = nil,
        type: UInt8, table: UInt32, destinationPrefixLength: UInt8, priority: UInt32? = nil, nextHopObject: UInt32? = nil
    ) {
        self.destination = destination
        self.outputInterface = outputInterface
        self.gateway = gateway
        self.preferredSource = preferredSource
        self.type = type
        self.table = table
        self.destinationPrefixLength = destinationPrefixLength
        self.priority = priority
        self.nextHopObject = nextHopObject
    }
}

/// Why the kernel has no path to a destination.
package enum RouteLookupFailure: Error, Hashable, Sendable {
    /// A `blackhole` route matched (`EINVAL`).
    case blackhole
    /// An `unreachable` route matched (`EHOSTUNREACH`); also a FIB-match with
    /// an output interface that has no route.
    case unreachable
    /// A `prohibit` route matched (`EACCES`).
    case prohibited
    /// Nothing matched (`ENETUNREACH`), or the family is not configured.
    case noRoute
    /// The lookup itself failed.
    case failed(NetlinkError)

    /// `operation` is built only for an unexpected errno: a route that is gone
    /// (`ENETUNREACH`) answers most lookups after a removal.
    init(errno: Int32, operation: @autoclosure () -> String) {
        switch errno {
        case EINVAL: self = .blackhole
        case EHOSTUNREACH: self = .unreachable
        case EACCES, EPERM: self = .prohibited
        case ENETUNREACH, EAFNOSUPPORT, ENETDOWN: self = .noRoute
        default: self = .failed(.system(operation: operation(), errno: errno))
        }
    }
}

extension RouteLookup {
    /// Reads an `RTM_NEWROUTE` answer to `RTM_GETROUTE`. With `net.ipv4.nexthop_compat_mode=0`
    /// a FIB-match answer for a route that names a next-hop object carries its id and neither
    /// interface nor gateway: the route leaves by the interface the lookup was restricted to,
    /// and its gateway is left to the caller to ask (`RtnetlinkQuery.lookupRoute`).
    init?(_ header: UnsafeMutablePointer<nlmsghdr>, destination: IPAddress, requestedInterface: Int32?) {
        guard let route = header.payload(as: rtmsg.self) else { return nil }
        var outputInterface: Int32?
        var gateway: IPAddress?
        var source: IPAddress?
        var table = UInt32(route.rtm_table)
        var priority: UInt32?
        var nextHopObject: UInt32?
        header.forEachAttribute(headerSize: MemoryLayout<rtmsg>.size) { attribute in
            switch attribute.type {
            case RouteAttribute.outputInterface: outputInterface = Int32(bitPattern: attribute.u32)
            case RouteAttribute.gateway: gateway = IPAddress(bytes: attribute.bytes)
            case RouteAttribute.via: gateway = IPAddress(bytes: Array(attribute.bytes.dropFirst(2)))
            case RouteAttribute.preferredSource: source = IPAddress(bytes: attribute.bytes)
            case RouteAttribute.table: table = attribute.u32
            case RouteAttribute.priority: priority = attribute.u32
            case RouteAttribute.nextHopObject: nextHopObject = attribute.u32
            case RouteAttribute.multipath where outputInterface == nil:
                (outputInterface, gateway) = Self.nexthop(in: attribute.bytes, preferring: requestedInterface)
            default: break
            }
        }
        guard let outputInterface = outputInterface ?? (nextHopObject != nil ? requestedInterface : nil) else { return nil }
        self.init(
            destination: destination, outputInterface: outputInterface, gateway: gateway,
            preferredSource: source, type: route.rtm_type, table: table,
            destinationPrefixLength: route.rtm_dst_len, priority: priority, nextHopObject: nextHopObject)
    }

    /// Picks one nexthop of an `RTA_MULTIPATH` (FIB-match answers for ECMP routes):
    /// the one on `preferring`, else the first.
    private static func nexthop(in bytes: [UInt8], preferring: Int32?) -> (Int32?, IPAddress?) {
        var found: (Int32?, IPAddress?) = (nil, nil)
        var offset = 0
        // struct rtnexthop { u16 len; u8 flags; u8 hops; s32 ifindex; } + attributes
        while offset + 8 <= bytes.count {
            let length = Int(UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8)
            guard length >= 8, offset + length <= bytes.count else { break }
            let index = bytes[offset + 4..<offset + 8].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
            var gateway: IPAddress?
            var attributeOffset = offset + 8
            while attributeOffset + 4 <= offset + length {
                let attributeLength = Int(UInt16(bytes[attributeOffset]) | UInt16(bytes[attributeOffset + 1]) << 8)
                let type = UInt16(bytes[attributeOffset + 2]) | UInt16(bytes[attributeOffset + 3]) << 8
                guard attributeLength >= 4, attributeOffset + attributeLength <= offset + length else { break }
                let value = Array(bytes[attributeOffset + 4..<attributeOffset + attributeLength])
                if type == RouteAttribute.gateway { gateway = IPAddress(bytes: value) }
                if type == RouteAttribute.via { gateway = IPAddress(bytes: Array(value.dropFirst(2))) }
                attributeOffset += (attributeLength + 3) & ~3
            }
            if found.0 == nil || index == preferring { found = (index, gateway) }
            if index == preferring { break }
            offset += (length + 3) & ~3
        }
        return found
    }
}
