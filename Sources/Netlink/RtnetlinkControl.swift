import CNetlink
import IPAddresses

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// Changes kernel state the way `ip` does, over the caller's own socket: for
/// benchmarks that must timestamp the instant before the request is sent.
package final class RtnetlinkControl {
    private let socket: NetlinkSocket

    package init() throws {
        socket = try NetlinkSocket()
        socket.setReceiveTimeout(milliseconds: 2_000)
    }

    /// `ip link set dev X up|down`.
    package func setLink(_ index: Int32, up: Bool) throws {
        try request(MessageType.newLink, flags: 0, "setting link \(index) \(up ? "up" : "down")") { message in
            var info = ifinfomsg()
            info.ifi_family = UInt8(AF_UNSPEC)
            info.ifi_index = index
            info.ifi_flags = up ? LinkFlags.up.rawValue : 0
            info.ifi_change = LinkFlags.up.rawValue
            return nlmsg_append(message, &info, MemoryLayout<ifinfomsg>.size, Int32(NLMSG_ALIGNTO))
        }
    }

    /// `ip route add|del DEST/LEN via GATEWAY dev X` in the main table.
    package func route(add: Bool, destination: IPAddress, prefixLength: UInt8, gateway: IPAddress, interface: Int32) throws {
        let type = add ? MessageType.newRoute : MessageType.deleteRoute
        let flags: Int32 = add ? 0x400 | 0x200 : 0 // NLM_F_CREATE | NLM_F_EXCL
        try request(type, flags: flags, "\(add ? "adding" : "deleting") route \(destination)/\(prefixLength)") { message in
            var route = rtmsg()
            route.rtm_family = UInt8(destination.family.kernelValue)
            route.rtm_dst_len = prefixLength
            route.rtm_table = 254 // RT_TABLE_MAIN
            // A delete matches on every field it sets: leave protocol and type open, as `ip` does.
            route.rtm_protocol = add ? 4 : 0 // RTPROT_STATIC
            route.rtm_scope = add ? 0 : 255 // RT_SCOPE_UNIVERSE, RT_SCOPE_NOWHERE
            route.rtm_type = add ? RouteType.unicast : 0
            var status = nlmsg_append(message, &route, MemoryLayout<rtmsg>.size, Int32(NLMSG_ALIGNTO))
            if status >= 0, prefixLength > 0 { status = put(message, RouteAttribute.destination, destination.bytes) }
            if status >= 0 { status = put(message, RouteAttribute.gateway, gateway.bytes) }
            if status >= 0 { status = nla_put_u32(message, Int32(RouteAttribute.outputInterface), UInt32(bitPattern: interface)) }
            return status
        }
    }

    /// `ip addr add|del ADDRESS/LEN dev X`.
    package func address(add: Bool, _ address: IPAddress, prefixLength: UInt8, interface: Int32) throws {
        let type = add ? MessageType.newAddress : MessageType.deleteAddress
        try request(type, flags: add ? 0x400 | 0x200 : 0, "\(add ? "adding" : "deleting") address \(address)") { message in
            var info = ifaddrmsg()
            info.ifa_family = UInt8(address.family.kernelValue)
            info.ifa_prefixlen = prefixLength
            info.ifa_index = UInt32(bitPattern: interface)
            var status = nlmsg_append(message, &info, MemoryLayout<ifaddrmsg>.size, Int32(NLMSG_ALIGNTO))
            if status >= 0 { status = put(message, 2, address.bytes) } // IFA_LOCAL
            if status >= 0 { status = put(message, 1, address.bytes) } // IFA_ADDRESS
            return status
        }
    }

    private func put(_ message: OpaquePointer, _ type: UInt16, _ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBytes { nla_put(message, Int32(type), Int32($0.count), $0.baseAddress) }
    }

    /// Sends with `NLM_F_ACK` and waits for the kernel's answer.
    private func request(_ type: UInt16, flags: Int32, _ operation: String, build: (OpaquePointer) -> Int32) throws {
        let sequence = try socket.send(
            type: type, flags: MessageFlags.request | 0x4 | flags, // NLM_F_ACK
            operation: operation, build: build)
        while true {
            guard case let .messages(bytes) = try socket.receive(blocking: true, operation: operation) else { continue }
            var code: Int32?
            socket.forEachMessage(in: bytes) { header in
                if header.pointee.nlmsg_seq == sequence, header.pointee.nlmsg_type == MessageType.error {
                    code = header.payload(as: nlmsgerr.self)?.error ?? -EPROTO
                }
            }
            guard let code else { continue }
            if code != 0 { throw NetlinkError.system(operation: operation, errno: -code) }
            return
        }
    }
}
