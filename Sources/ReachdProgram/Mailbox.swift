import SDBus
import Synchronization
import SystemCalls

/// How other threads hand results to the event loop: a queue and a wake pipe the
/// loop watches. The loop thread alone takes messages out.
final class Mailbox<Message: Sendable>: Sendable {
    private let wake: WakePipe
    private let queue = Mutex<[Message]>([])

    init() throws {
        wake = try WakePipe()
    }

    func post(_ message: Message) {
        queue.withLock { $0.append(message) }
        wake.signal()
    }

    /// Hands `receive` what was posted, oldest first, on `loop`'s thread, until the watch is let go.
    func deliver(on loop: EventLoop, to receive: @escaping ([Message]) -> Void) throws -> EventLoop.Watch {
        try loop.onReadable(wake.readEnd.rawValue, of: wake) { [self] in receive(take()) }
    }

    /// Everything posted so far, oldest first.
    private func take() -> [Message] {
        wake.drain()
        return queue.withLock { messages in
            var taken: [Message] = []
            swap(&taken, &messages)
            return taken
        }
    }
}
