import Synchronization
import SystemCalls

/// How other threads hand results to the event loop: a queue and a wake pipe the
/// loop watches. The loop thread alone takes messages out.
final class Mailbox<Message: Sendable>: Sendable {
    private let wake: WakePipe
    private let queue = Mutex<[Message]>([])

    /// The descriptor for the loop to watch.
    var descriptor: Int32 { wake.readEnd.rawValue }

    init() throws {
        wake = try WakePipe()
    }

    func post(_ message: Message) {
        queue.withLock { $0.append(message) }
        wake.signal()
    }

    /// Everything posted so far, oldest first.
    func take() -> [Message] {
        wake.drain()
        return queue.withLock { messages in
            var taken: [Message] = []
            swap(&taken, &messages)
            return taken
        }
    }
}
