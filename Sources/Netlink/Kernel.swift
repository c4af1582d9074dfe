import IPAddresses
import SystemCalls

/// The kernel as a monitor meets it: events to read, and questions to ask. The
/// rtnetlink sockets (`RtnetlinkSubscription`, `RtnetlinkQuery`) are the real
/// thing; a test hands the monitor another implementation (an embedded kernel fed
/// datagrams in the kernel's own format) to exercise its decisions without a
/// network namespace, the way swift-nio's `EmbeddedChannel` stands in for a socket.

/// What a drain of the event queue found.
package enum KernelEventsDrain: Equatable, Sendable {
    /// Everything queued was read; `messages` of them mattered.
    case drained(messages: Int)
    /// Stopped early — at the limit, or because a message asked to be acted on at
    /// once — with more possibly queued: handle what you have, then call again.
    case paused(messages: Int)
    /// The kernel dropped messages (`ENOBUFS`): the state is unknown until re-dumped.
    /// The queue has been emptied already, so dump now; every event from here on
    /// is either queued or reported as another overrun.
    case overrun
}

/// The kernel's change notifications, read without blocking.
package protocol KernelEvents: AnyObject {
    /// The descriptor to poll for readability.
    var fileDescriptor: Int32 { get }
    /// What the kernel granted for the receive buffer (bytes).
    var receiveBufferSize: Int { get }
    /// Reads every queued message, up to `limit` of them, handing each to `handle`.
    /// When `handle` returns true the drain stops after the current datagram
    /// (nothing read is ever left unhandled).
    func drain(limit: Int, _ handle: (RtnetlinkMessage) -> Bool) throws -> KernelEventsDrain
}

/// The kernel's answers: its tables dumped, and its FIB asked.
package protocol KernelQueries: AnyObject {
    /// Every link of the namespace (`ip link show`).
    func links() throws -> [Link]
    /// Every address of the namespace, both families (`ip addr show`).
    func addresses() throws -> [InterfaceAddress]
    /// Which way a packet to `destination` would go (`ip route get`); see `RtnetlinkQuery`.
    func lookupRoute(to destination: IPAddress, outputInterface: Int32?, matchingFIBEntry: Bool) -> Result<RouteLookup, RouteLookupFailure>
}

extension KernelQueries {
    package func lookupRoute(to destination: IPAddress) -> Result<RouteLookup, RouteLookupFailure> {
        lookupRoute(to: destination, outputInterface: nil, matchingFIBEntry: false)
    }
}
