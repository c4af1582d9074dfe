import CNetlink

#if canImport(Glibc)
import Glibc
#endif

/// The subscribed socket: every link, address, route, rule and next-hop change of
/// the network namespace it was created in, and the router-advertisement options
/// the kernel passes on, read without blocking.
package final class RtnetlinkSubscription: KernelEvents {
    private let socket: NetlinkSocket

    /// What the kernel granted for the receive buffer (bytes).
    package let receiveBufferSize: Int

    /// The descriptor to poll for readability.
    package var fileDescriptor: Int32 { socket.fileDescriptor }

    /// - Parameter receiveBufferSize: asked for with `SO_RCVBUFFORCE` when
    ///   privileged, `SO_RCVBUF` (capped by `net.core.rmem_max`) otherwise.
    package init(receiveBufferSize: Int = 4 << 20) throws {
        socket = try NetlinkSocket()
        for group in [
            MulticastGroup.link, MulticastGroup.ipv4Address, MulticastGroup.ipv6Address,
            MulticastGroup.ipv4Route, MulticastGroup.ipv6Route,
            MulticastGroup.ipv4Rule, MulticastGroup.ipv6Rule, MulticastGroup.ndUserOption
        ] {
            try socket.join(group: group)
        }
        // Kernels before 5.3 have no next-hop objects, and refuse the group.
        try? socket.join(group: MulticastGroup.nextHop)
        self.receiveBufferSize = socket.setReceiveBufferSize(receiveBufferSize)
    }

    /// Reads every queued message (`KernelEvents.drain`).
    package func drain(limit: Int = 10_000, _ handle: (RtnetlinkMessage) -> Bool) throws -> KernelEventsDrain {
        var count = 0
        var urgent = false
        while count < limit && !urgent {
            switch try socket.receive(blocking: false, operation: "reading rtnetlink events") {
            case .wouldBlock:
                return .drained(messages: count)
            case .overrun:
                try discardQueued()
                return .overrun
            case let .messages(bytes):
                socket.forEachMessage(in: bytes) { header in
                    if let message = RtnetlinkMessage(header) {
                        count += 1
                        if handle(message) { urgent = true }
                    }
                }
            }
        }
        return .paused(messages: count)
    }

    /// Reads the queue empty, keeping nothing. After an overrun the kernel reports
    /// `ENOBUFS` once, on entering the congested state, and leaves that state only
    /// when the queue has been read empty: until then it drops messages *silently*.
    /// A monitor that dumped first and read the stale queue afterwards would lose
    /// the changes made during its dump without ever being told.
    private func discardQueued() throws {
        while true {
            if case .wouldBlock = try socket.receive(blocking: false, operation: "discarding rtnetlink events") {
                return
            }
        }
    }
}
