import Netlink
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Writes messages as the kernel sends them on an rtnetlink socket — headers,
/// fixed parts and attributes, each 4-byte aligned — so that what an embedded
/// kernel delivers is read by the very parsers the real socket's bytes go through
/// (`RtnetlinkDatagram.decode`). Only the attributes reachd reads are written.
package enum RtnetlinkEncoder {
    /// One datagram holding `messages`, in order.
    package static func datagram(_ messages: [RtnetlinkMessage]) -> [UInt8] {
        messages.flatMap(message)
    }

    /// One message, header included.
    package static func message(_ message: RtnetlinkMessage) -> [UInt8] {
        switch message {
        case let .link(link): return Self.link(link, type: Kind.newLink)
        case let .linkRemoved(index): return Self.link(Link(index: index, name: "if\(index)"), type: Kind.deleteLink)
        case let .address(address): return Self.address(address, type: Kind.newAddress)
        case let .addressRemoved(address): return Self.address(address, type: Kind.deleteAddress)
        case let .route(change): return route(change)
        case .rule: return wrap(Kind.newRule, [UInt8(AF_INET), 0, 0, 0, 254, 0, 0, 1] + u32(0))
        // struct nhmsg: family, scope, protocol, reserved, flags; then NHA_ID.
        case .nextHop: return wrap(Kind.deleteNextHop, [UInt8(AF_INET), 0, 0, 0] + u32(0) + attribute(1, u32(1)))
        case .routerOption: preconditionFailure("router-advertisement options are not encoded")
        }
    }

    /// Message types (`RTM_*`) and attribute types (`IFLA_*`, `IFA_*`, `RTA_*`) of `linux/rtnetlink.h`.
    private enum Kind {
        static let newLink: UInt16 = 16, deleteLink: UInt16 = 17
        static let newAddress: UInt16 = 20, deleteAddress: UInt16 = 21
        static let newRoute: UInt16 = 24, deleteRoute: UInt16 = 25
        static let newRule: UInt16 = 32
        static let deleteNextHop: UInt16 = 105
    }

    private static func link(_ link: Link, type: UInt16) -> [UInt8] {
        // struct ifinfomsg: family, pad, type, index, flags, change.
        var body: [UInt8] = [UInt8(AF_UNSPEC), 0] + u16(link.hardwareType) + i32(link.index) + u32(link.flags.rawValue) + u32(0)
        body += attribute(3, Array(link.name.utf8) + [0]) // IFLA_IFNAME
        body += attribute(4, u32(link.mtu)) // IFLA_MTU
        if let lower = link.lowerIndex { body += attribute(5, i32(lower)) } // IFLA_LINK
        if let master = link.masterIndex { body += attribute(10, i32(master)) } // IFLA_MASTER
        body += attribute(16, [link.operationalState.rawValue]) // IFLA_OPERSTATE
        if let kind = link.kind { body += attribute(18, attribute(1, Array(kind.utf8) + [0])) } // IFLA_LINKINFO { IFLA_INFO_KIND }
        return wrap(type, body)
    }

    private static func address(_ address: InterfaceAddress, type: UInt16) -> [UInt8] {
        // struct ifaddrmsg: family, prefix length, flags (the low 8 bits), scope, index.
        let family = UInt8(address.address.family.kernelValue)
        var body: [UInt8] =
            [family, address.prefixLength, UInt8(truncatingIfNeeded: address.flags.rawValue), address.scope]
            + i32(address.interfaceIndex)
        body += attribute(1, address.address.bytes) // IFA_ADDRESS
        if address.address.family == .v4 { body += attribute(2, address.address.bytes) } // IFA_LOCAL: IPv4 sends both
        body += attribute(8, u32(address.flags.rawValue)) // IFA_FLAGS
        return wrap(type, body)
    }

    private static func route(_ change: RouteChange) -> [UInt8] {
        // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
        let family = UInt8(change.family.kernelValue)
        var body: [UInt8] = [family, change.destinationPrefixLength, 0, 0, change.table, 3, 0, change.type] + u32(0)
        body += attribute(15, u32(UInt32(change.table))) // RTA_TABLE
        if let destination = change.destination { body += attribute(1, destination.bytes) } // RTA_DST
        if change.outputInterfaces.count == 1 {
            body += attribute(4, i32(change.outputInterfaces[0])) // RTA_OIF
        } else if !change.outputInterfaces.isEmpty {
            // RTA_MULTIPATH: one struct rtnexthop (length, flags, hops, index) per next hop.
            body += attribute(9, change.outputInterfaces.flatMap { u16(8) + [0, 0] + i32($0) })
        }
        return wrap(change.removed ? Kind.deleteRoute : Kind.newRoute, body)
    }

    /// struct nlmsghdr (length, type, flags, sequence 0, port 0: an event) before `body`.
    private static func wrap(_ type: UInt16, _ body: [UInt8]) -> [UInt8] {
        u32(UInt32(16 + body.count)) + u16(type) + u16(0) + u32(0) + u32(0) + body
    }

    /// struct nlattr (length, type) and the payload, padded to 4 bytes.
    private static func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        let bytes = u16(UInt16(4 + payload.count)) + u16(type) + payload
        return bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }

    // Netlink is in the host's byte order.
    private static func u16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value, Array.init) }
    private static func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value, Array.init) }
    private static func i32(_ value: Int32) -> [UInt8] { u32(UInt32(bitPattern: value)) }
}
