/// One connection the object is served on (the bus, or a peer of the private
/// socket), and what it has been sent of the object's state.
///
/// The object's signals carry state, not history: a connection that cannot take
/// more now — its socket is full, or it has not finished authenticating — is not
/// queued further. Once it can, it is sent what changed since, in one go. So
/// whatever a subscriber missed in between, the last thing it holds is the
/// object's current state, and a slow reader costs the daemon a socket buffer
/// and one partly written message, never a backlog.
final class Subscriber {
    let connection: BusConnection
    /// What the connection holds, as far as the daemon is concerned: it was
    /// handed to sd-bus (and so reaches the peer in order, or not at all).
    var sent: ReachabilityObject.State
    /// Since when a change is waiting for the connection to take more; nil while it keeps up.
    var behindSince: ContinuousClock.Instant?
    /// Sent `InterfaceChanged`: a private peer once it called `WatchInterfaces()`; the
    /// bus while any of its clients that called it is still connected (the broker then
    /// delivers each signal only to the clients whose match rules ask for it). Nobody
    /// receives a pod's veth who did not ask, and while nobody asks none is rendered.
    var watchesInterfaces: Bool { connection.isPeerToPeer ? peerWatchesInterfaces : !busInterfaceWatchers.isEmpty }
    /// A private peer called `WatchInterfaces()`.
    var peerWatchesInterfaces = false
    /// The bus's clients (unique names) that called `WatchInterfaces()` and are still connected.
    var busInterfaceWatchers: Set<String> = []
    /// Interface changes not yet sent, the latest per interface: a peer that falls
    /// behind holds at most one per interface, never a queue that grows with the churn.
    var pendingInterfaces: [Int: (name: String, document: String)] = [:]
    /// The `WatchPath()` watches this connection is sent `PathChanged` of: a private
    /// peer's own; on the bus, each watch with the clients (unique names) that asked for it.
    var pathWatchers: [String: Set<String>] = [:]
    /// `PathChanged` not yet sent, the latest document per watch.
    var pendingPaths: [String: String] = [:]

    init(connection: BusConnection, holding state: ReachabilityObject.State) {
        self.connection = connection
        sent = state
    }

    var canTakeMore: Bool { connection.canTakeMore }

    var isBehind: Bool { behindSince != nil }

    /// Whether anything is waiting to be sent.
    func isUpToDate(with state: ReachabilityObject.State) -> Bool {
        sent == state && pendingInterfaces.isEmpty && pendingPaths.isEmpty
    }

    /// How many watches `watcher` (a bus client's unique name, or "" for a private peer) holds.
    func pathWatchCount(of watcher: String) -> Int { pathWatchers.values.count { $0.contains(watcher) } }
}
