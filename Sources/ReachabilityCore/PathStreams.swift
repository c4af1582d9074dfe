/// The path streams one source feeds — a `ReachabilityMonitor`, a `ReachabilityClient` —
/// kept under its owner's lock. Each stream holds the latest path only; the first path a
/// consumer reads is marked `initial` (the current one when it subscribes, else the first
/// to come), even when a newer path replaced it unread. Paths are yielded outside the
/// owner's lock, through what `deliveries` returns.
package struct PathStreams: Sendable {
    package typealias Continuation = AsyncStream<Path>.Continuation

    private var streams: [Int: (continuation: Continuation, hasInitial: Bool)] = [:]
    private var nextID = 0

    package init() {}

    package var isEmpty: Bool { streams.isEmpty }

    /// Adds a stream, handing it `current` (marked initial) at once when there is one.
    package mutating func add(_ continuation: Continuation, current: Path?) -> Int {
        nextID += 1
        if var current {
            current.initial = true
            continuation.yield(current)
        }
        streams[nextID] = (continuation, current != nil)
        return nextID
    }

    package mutating func remove(_ id: Int) { streams[id] = nil }

    /// Every stream, now forgotten (to finish them).
    package mutating func removeAll() -> [Continuation] {
        defer { streams.removeAll() }
        return streams.values.map(\.continuation)
    }

    /// Where the next path goes, and whether it is each consumer's first; with `restart`
    /// (a client connected again) it is everyone's first.
    package mutating func deliveries(restart: Bool = false) -> [Delivery] {
        defer { for id in streams.keys { streams[id]?.hasInitial = true } }
        return streams.values.map { Delivery(continuation: $0.continuation, first: restart || !$0.hasInitial) }
    }

    /// One stream's next path.
    package struct Delivery: Sendable {
        let continuation: Continuation
        let first: Bool

        /// A stream of its own (a client's `WatchPath()` stream), outside any `PathStreams`.
        package init(continuation: Continuation, first: Bool) {
            self.continuation = continuation
            self.first = first
        }

        /// Yields `path`, marked initial when it is the consumer's first. The stream holds one
        /// path: if the one it replaced was the consumer's first, so is this one.
        package func send(_ path: Path) {
            var marked = path
            marked.initial = first
            if case let .dropped(replaced) = continuation.yield(marked), replaced.initial, !first {
                marked.initial = true
                continuation.yield(marked)
            }
        }
    }
}
