import Synchronization

/// The interfaces that changed, for one subscriber: first the inventory (each entry
/// marked `initial`), then each interface as it changes.
///
/// It holds state, not history: an interface that changes again before the
/// consumer read it is replaced where it waits, so a consumer that falls behind a
/// container host's churn holds at most one entry per interface, and always ends
/// on each interface's latest state. Ends when its monitor or client stops, or
/// when the consuming task is cancelled.
public struct InterfaceChangeStream: AsyncSequence, Sendable {
    /// One interface's entry.
    public typealias Element = InterfaceChange

    package let buffer: Buffer

    package init(onTermination: @escaping @Sendable () -> Void) {
        buffer = Buffer(onTermination: onTermination)
    }

    /// An iterator over the entries; the stream is meant for one consumer.
    public func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

    /// Reads the stream's entries in order.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: Buffer

        /// The next entry; nil once the stream ended.
        public mutating func next() async -> InterfaceChange? {
            await buffer.next()
        }
    }

    /// The entries waiting for the consumer, latest per interface, in the order they first changed.
    package final class Buffer: Sendable {
        private struct State {
            var order: [Int] = []
            var head = 0
            var waiting: [Int: InterfaceChange] = [:]
            var consumer: CheckedContinuation<InterfaceChange?, Never>?
            var finished = false

            mutating func pop() -> InterfaceChange? {
                while head < order.count {
                    let index = order[head]
                    head += 1
                    if let entry = waiting.removeValue(forKey: index) {
                        compact()
                        return entry
                    }
                }
                compact()
                return nil
            }

            private mutating func compact() {
                guard head > 64, head * 2 > order.count else { return }
                order.removeFirst(head)
                head = 0
            }
        }

        private let state = Mutex(State())
        private let onTermination: @Sendable () -> Void

        init(onTermination: @escaping @Sendable () -> Void) {
            self.onTermination = onTermination
        }

        /// How many entries wait: at most one per interface.
        package var waitingCount: Int { state.withLock { $0.waiting.count } }

        package func put(_ entry: InterfaceChange) {
            let consumer = state.withLock { state -> CheckedContinuation<InterfaceChange?, Never>? in
                guard !state.finished else { return nil }
                if let consumer = state.consumer {
                    state.consumer = nil
                    return consumer
                }
                var entry = entry
                if let waiting = state.waiting[entry.index] {
                    entry.initial = entry.initial || waiting.initial // still the inventory's first word on it
                } else {
                    state.order.append(entry.index)
                }
                state.waiting[entry.index] = entry
                return nil
            }
            consumer?.resume(returning: entry)
        }

        package func finish() {
            let consumer = state.withLock { state -> CheckedContinuation<InterfaceChange?, Never>? in
                state.finished = true
                defer { state.consumer = nil }
                return state.consumer
            }
            consumer?.resume(returning: nil)
        }

        func next() async -> InterfaceChange? {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<InterfaceChange?, Never>) in
                    let ready: InterfaceChange?? = state.withLock { state in
                        if let entry = state.pop() { return .some(entry) }
                        if state.finished || Task.isCancelled { return .some(nil) }
                        state.consumer = continuation
                        return .none
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                finish()
                onTermination()
            }
        }
    }
}
