import CNetlink
import IPAddresses

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// The unsubscribed socket for requests: link and address dumps (start-up and
/// resync after an overrun) and `RTM_GETROUTE` lookups. Blocking, with a timeout
/// so a wedged kernel answer cannot hang the caller forever.
package final class RtnetlinkQuery: KernelQueries {
    private let socket: NetlinkSocket

    package init(timeoutMilliseconds: Int = 2_000) throws {
        socket = try NetlinkSocket()
        socket.setReceiveBufferSize(1 << 20)
        socket.setReceiveTimeout(milliseconds: timeoutMilliseconds)
    }

    /// Every link of the namespace (`ip link show`).
    package func links() throws -> [Link] {
        var links: [Link] = []
        try dump(type: MessageType.getLink, operation: "dumping links", reset: { links.removeAll() }) { message in
            if case let .link(link) = message { links.append(link) }
        } build: { message in
            var info = ifinfomsg()
            info.ifi_family = UInt8(AF_UNSPEC)
            let appended = nlmsg_append(message, &info, MemoryLayout<ifinfomsg>.size, Int32(NLMSG_ALIGNTO))
            guard appended >= 0 else { return appended }
            return nla_put_u32(message, LinkAttribute.extendedMask, LinkAttribute.skipStatistics)
        }
        return links
    }

    /// Every address of the namespace, both families (`ip addr show`).
    package func addresses() throws -> [InterfaceAddress] {
        var addresses: [InterfaceAddress] = []
        try dump(
            type: MessageType.getAddress, operation: "dumping addresses",
            reset: { addresses.removeAll() }
        ) { message in
            if case let .address(address) = message { addresses.append(address) }
        } build: { message in
            var info = ifaddrmsg()
            info.ifa_family = UInt8(AF_UNSPEC)
            return nlmsg_append(message, &info, MemoryLayout<ifaddrmsg>.size, Int32(NLMSG_ALIGNTO))
        }
        return addresses
    }

    /// Asks the kernel's FIB which way a packet to `destination` would go, as
    /// `ip route get` does: policy rules, tables, metrics and ECMP included.
    /// Nothing is sent to the destination.
    ///
    /// - Parameters:
    ///   - outputInterface: restrict the lookup to routes through this interface.
    ///   - matchingFIBEntry: answer with the FIB entry that matched (`ip route get fibmatch`):
    ///     its prefix length and metric. With `outputInterface` this tells whether that
    ///     interface has a real route (a plain lookup would invent an on-link one).
    package func lookupRoute(
        to destination: IPAddress, outputInterface: Int32? = nil,
        matchingFIBEntry: Bool = false
    ) -> Result<RouteLookup, RouteLookupFailure> {
        // Built only when something fails: lookups are the hot path of every evaluation.
        func operation() -> String { "looking up the route to \(destination)" }
        do {
            let sequence = try socket.send(
                type: MessageType.getRoute, flags: MessageFlags.request,
                operation: operation()
            ) { message in
                var route = rtmsg()
                route.rtm_family = UInt8(destination.family.kernelValue)
                route.rtm_dst_len = UInt8(destination.family.bitCount)
                route.rtm_flags = matchingFIBEntry ? fibMatchFlag : 0
                var status = nlmsg_append(message, &route, MemoryLayout<rtmsg>.size, Int32(NLMSG_ALIGNTO))
                guard status >= 0 else { return status }
                status = destination.bytes.withUnsafeBytes { raw in
                    nla_put(message, Int32(RouteAttribute.destination), Int32(raw.count), raw.baseAddress)
                }
                if status >= 0, let outputInterface {
                    status = nla_put_u32(message, Int32(RouteAttribute.outputInterface), UInt32(bitPattern: outputInterface))
                }
                return status
            }
            while true {
                guard case let .messages(bytes) = try socket.receive(blocking: true, operation: operation()) else {
                    throw NetlinkError.malformed(operation: operation(), detail: "receive buffer overrun")
                }
                var answer: Result<RouteLookup, RouteLookupFailure>?
                socket.forEachMessage(in: bytes) { header in
                    guard answer == nil, header.pointee.nlmsg_seq == sequence else { return }
                    if header.pointee.nlmsg_type == MessageType.error {
                        let code = header.payload(as: nlmsgerr.self)?.error ?? -EPROTO
                        answer = .failure(RouteLookupFailure(errno: -code, operation: operation()))
                    } else if header.pointee.nlmsg_type == MessageType.newRoute {
                        if let lookup = RouteLookup(header, destination: destination, requestedInterface: outputInterface) {
                            answer = .success(lookup)
                        } else {
                            answer = .failure(.failed(.malformed(operation: operation(), detail: "answer without an interface")))
                        }
                    }
                }
                guard let answer else { continue }
                // A FIB-match answer that named only its next-hop object (`RouteLookup.init`):
                // the gateway is the resolved route's, through the same interface.
                if matchingFIBEntry, case var .success(entry) = answer, entry.nextHopObject != nil, entry.gateway == nil,
                    case let .success(resolved) = lookupRoute(to: destination, outputInterface: entry.outputInterface)
                {
                    entry.gateway = resolved.gateway
                    entry.preferredSource = entry.preferredSource ?? resolved.preferredSource
                    return .success(entry)
                }
                return answer
            }
        } catch let error as NetlinkError {
            return .failure(.failed(error))
        } catch {
            return .failure(.failed(.malformed(operation: operation(), detail: "\(error)")))
        }
    }

    /// Runs a dump to its end. A dump the kernel marks inconsistent (the table
    /// changed under it, `NLM_F_DUMP_INTR`) is started again.
    private func dump(
        type: UInt16, operation: String, reset: () -> Void,
        handle: (RtnetlinkMessage) -> Void, build: (OpaquePointer) -> Int32
    ) throws {
        for _ in 0..<5 {
            reset()
            let sequence = try socket.send(
                type: type, flags: MessageFlags.request | MessageFlags.dump,
                operation: operation, build: build)
            var finished = false
            var interrupted = false
            while !finished {
                guard case let .messages(bytes) = try socket.receive(blocking: true, operation: operation) else {
                    throw NetlinkError.malformed(operation: operation, detail: "receive buffer overrun")
                }
                try socket.forEachMessage(in: bytes) { header in
                    guard header.pointee.nlmsg_seq == sequence, !finished else { return }
                    if header.pointee.nlmsg_flags & MessageFlags.dumpInterrupted != 0 { interrupted = true }
                    switch header.pointee.nlmsg_type {
                    case MessageType.done:
                        finished = true
                    case MessageType.error:
                        let code = header.payload(as: nlmsgerr.self)?.error ?? -EPROTO
                        throw NetlinkError.system(operation: operation, errno: -code)
                    default:
                        if let message = RtnetlinkMessage(header) { handle(message) }
                    }
                }
            }
            if !interrupted { return }
        }
        throw NetlinkError.malformed(operation: operation, detail: "the dump was interrupted five times in a row")
    }
}
