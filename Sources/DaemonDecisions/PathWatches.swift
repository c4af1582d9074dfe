import IPAddresses
import ReachabilityCore
import SystemCalls

/// The daemon's `WatchPath()` watches (docs/api.md): one per distinct request,
/// however many clients hold it, each with the addresses its destination resolved
/// to and the path last published. The daemon evaluates every watch after each
/// batch of kernel events that could change a path, so a watch costs a few route
/// lookups per such batch, whoever holds it; the bus object keeps who holds what.
package struct PathWatches {
    /// At most this many distinct watches (each client holds at most eight).
    package static let limit = 256

    package struct Watch {
        package let request: PathWatchRequest
        /// What a named destination resolved to; the literal address; none for the default path.
        package var addresses: [IPAddress]
        /// The path last published for it.
        package var current: Path?
    }

    package private(set) var watches: [String: Watch] = [:]

    package init() {}

    package var isFull: Bool { watches.count >= Self.limit }

    /// Every address a watch stands for: routes that cover one matter to the engine.
    package var addresses: [IPAddress] { watches.values.flatMap(\.addresses) }

    /// The watches whose destination is a name, to resolve again when the network changes.
    package var namedDestinations: [(key: String, name: String)] {
        watches.compactMap { key, watch in
            let name = watch.request.destination
            return name.isEmpty || IPAddress(name) != nil ? nil : (key, name)
        }
    }

    package subscript(key: String) -> Watch? { watches[key] }

    /// Adds a watch (or gives an existing one new addresses).
    package mutating func insert(_ request: PathWatchRequest, addresses: [IPAddress]) {
        if watches[request.key] != nil {
            watches[request.key]?.addresses = addresses
        } else {
            watches[request.key] = Watch(request: request, addresses: addresses)
        }
    }

    /// A name resolved again: its new addresses (ignored if nobody holds the watch any more).
    package mutating func resolved(_ key: String, addresses: [IPAddress]) {
        watches[key]?.addresses = addresses
    }

    /// Forgets the watches nobody holds.
    package mutating func keep(only keys: Set<String>) {
        watches = watches.filter { keys.contains($0.key) }
    }

    /// Evaluates every watch; returns those whose path changed, as their successor
    /// of the one last published (`since` kept while the status stays).
    package mutating func refresh(_ evaluate: (Watch) -> Path) -> [(key: String, path: Path)] {
        var changed: [(key: String, path: Path)] = []
        for key in watches.keys.sorted() {
            guard let watch = watches[key], let path = evaluate(watch).succeeding(watch.current) else { continue }
            watches[key]?.current = path
            changed.append((key, path))
        }
        return changed
    }

    /// The current path of one watch, evaluating it when it has none yet.
    package mutating func current(_ key: String, _ evaluate: (Watch) -> Path) -> Path? {
        guard let watch = watches[key] else { return nil }
        if let current = watch.current { return current }
        let path = evaluate(watch).succeeding(nil)
        watches[key]?.current = path
        return path
    }
}
