import Dispatch

/// Changes of one value of the path — its status, its interface, whether it is
/// expensive — rather than of the whole document: what `ReachabilityMonitor` and
/// `ReachabilityClient` build `changes(of:)` and `onChange(of:)` on.
///
/// The first value is the current one; after it, a value is delivered only when
/// it differs from the one delivered before (an address or a gateway changing
/// leaves `\.status` silent). Like the path streams it holds state, not history:
/// a consumer that falls behind gets the latest value.
package enum PathChanges {
    /// The distinct values of `keyPath` along `paths`, until `paths` ends or the consumer stops.
    package static func values<Value: Equatable & Sendable>(
        of keyPath: KeyPath<Path, Value> & Sendable,
        in paths: AsyncStream<Path>
    ) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task {
            var last: Value?
            for await path in paths {
                let value = path[keyPath: keyPath]
                if value != last {
                    last = value
                    continuation.yield(value)
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Calls `handler` on `queue` with each value of `values`, in order.
    package static func deliver<Value: Sendable>(
        _ values: AsyncStream<Value>, on queue: DispatchQueue,
        to handler: @escaping @Sendable (Value) -> Void
    ) -> PathChangeSubscription {
        PathChangeSubscription(
            Task {
                for await value in values {
                    // One at a time, in order: the next value waits for the handler.
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        queue.async {
                            handler(value)
                            done.resume()
                        }
                    }
                }
            })
    }
}

extension PathChanges {
    /// Calls `handler` on the main actor with each value of `values`, in order: for UI code,
    /// whose state is main-actor isolated (a closure on `DispatchQueue.main` is not, to Swift 6).
    package static func deliverOnMainActor<Value: Sendable>(
        _ values: AsyncStream<Value>,
        to handler: @escaping @MainActor (Value) -> Void
    ) -> PathChangeSubscription {
        PathChangeSubscription(
            Task { @MainActor in
                for await value in values { handler(value) }
            })
    }
}

/// A callback subscription made with `onChange(of:queue:_:)` or `onMainActorChange(_:)`: it lasts until
/// ``cancel()`` (or until its monitor stops), whether or not the caller keeps it.
public final class PathChangeSubscription: Sendable {
    private let task: Task<Void, Never>

    init(_ task: Task<Void, Never>) { self.task = task }

    /// Ends the subscription: no call of the handler starts after this returns.
    public func cancel() { task.cancel() }
}

extension ReachabilityMonitor {
    /// The distinct values of one key path of the path, the current one first:
    /// `monitor.changes(of: \.status)` is silent while only addresses move.
    /// Use ``paths`` for the whole document, this for the one value an app acts on.
    public func changes<Value: Equatable & Sendable>(of keyPath: KeyPath<Path, Value> & Sendable) -> AsyncStream<Value> {
        PathChanges.values(of: keyPath, in: paths)
    }

    /// The status alone (Alamofire's listener, GLib's `network-available`): `changes(of: \.status)`.
    public var statusChanges: AsyncStream<ReachabilityStatus> { changes(of: \.status) }

    /// Calls `handler` on `queue` with the current value of `keyPath`, then each time it changes.
    /// - Parameters:
    ///   - keyPath: The value followed: `\.status`, `\.interface?.name`, `\.expensive`.
    ///   - queue: Where the handler runs: a private serial queue by default,
    ///     which works in a plain `main.swift` (the main queue runs only under `dispatchMain()` or a run loop).
    ///   - handler: Called with each value, one call at a time.
    @discardableResult
    public func onChange<Value: Equatable & Sendable>(
        of keyPath: KeyPath<Path, Value> & Sendable,
        queue: DispatchQueue = DispatchQueue(label: "io.reachd.Reachability.changes"),
        _ handler: @escaping @Sendable (Value) -> Void
    ) -> PathChangeSubscription {
        PathChanges.deliver(changes(of: keyPath), on: queue, to: handler)
    }

    /// Calls `handler` on the main actor with the current path (marked initial), then every
    /// change — for UI code: `monitor.onMainActorChange { label.text = $0.status.description }`.
    /// The main actor runs under a UI toolkit's loop or `dispatchMain()`, not in a plain `main.swift` that returns.
    /// - Returns: the subscription; it lasts until cancelled (or until the monitor stops).
    @discardableResult
    public func onMainActorChange(_ handler: @escaping @MainActor (Path) -> Void) -> PathChangeSubscription {
        PathChanges.deliverOnMainActor(paths, to: handler)
    }

    /// Calls `handler` on the main actor with the current value of `keyPath`, then each time it changes.
    /// - Returns: the subscription; it lasts until cancelled (or until the monitor stops).
    @discardableResult
    public func onMainActorChange<Value: Equatable & Sendable>(
        of keyPath: KeyPath<Path, Value> & Sendable,
        _ handler: @escaping @MainActor (Value) -> Void
    ) -> PathChangeSubscription {
        PathChanges.deliverOnMainActor(changes(of: keyPath), to: handler)
    }
}
