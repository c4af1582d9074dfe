import Synchronization

/// What a stream delivered, collected by a task of its own.
final class Collected<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ stream: AsyncStream<Element>) {
        let running = Task { [weak self] in
            for await element in stream { self?.elements.withLock { $0.append(element) } }
        }
        task.withLock { $0 = running }
    }

    var all: [Element] { elements.withLock { $0 } }
    func cancel() { task.withLock { $0?.cancel() } }
}
