import SDBus

/// A connection io.reachd.Reachability1 is served on: what it has been sent
/// (`StateSubscription`'s rule), and what it asked to watch beside the path —
/// interfaces, and paths to destinations — with the latest change of each not yet sent.
final class Subscriber: StateSubscription<ReachabilityObject.State> {
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

    override func isUpToDate(with state: ReachabilityObject.State) -> Bool {
        sent == state && pendingInterfaces.isEmpty && pendingPaths.isEmpty
    }

    /// How many watches `watcher` (a bus client's unique name, or "" for a private peer) holds.
    func pathWatchCount(of watcher: String) -> Int { pathWatchers.values.count { $0.contains(watcher) } }

    /// `watcher` (a bus client's unique name, nil for a private peer) is sent `InterfaceChanged`
    /// from now on, or no longer; nothing waits for a connection nobody on it watches.
    func setWatchesInterfaces(_ watching: Bool, by watcher: String?) {
        if let watcher {
            if watching { busInterfaceWatchers.insert(watcher) } else { busInterfaceWatchers.remove(watcher) }
        } else {
            peerWatchesInterfaces = watching
        }
        if !watchesInterfaces { pendingInterfaces = [:] }
    }

    /// `watcher` ("" for a private peer) lets go of the watch `key`; a watch nobody on the
    /// connection holds any more is forgotten with what waited for it. False when it held none.
    func letGo(_ key: String, by watcher: String) -> Bool {
        guard pathWatchers[key]?.remove(watcher) != nil else { return false }
        if pathWatchers[key]?.isEmpty == true {
            pathWatchers[key] = nil
            pendingPaths[key] = nil
        }
        return true
    }
}
