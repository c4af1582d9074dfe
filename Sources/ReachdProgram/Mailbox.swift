import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How other threads hand results to the event loop: a queue and a pipe the
/// loop watches (Glibc's module has no eventfd). The loop thread alone takes
/// messages out.
final class Mailbox<Message: Sendable>: Sendable {
    /// The read end, for the loop to watch.
    let descriptor: Int32
    private let writeEnd: Int32
    private let queue = Mutex<[Message]>([])

    init() {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0, "pipe: \(String(cString: strerror(errno)))")
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        descriptor = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(descriptor)
        close(writeEnd)
    }

    func post(_ message: Message) {
        queue.withLock { $0.append(message) }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Everything posted so far, oldest first.
    func take() -> [Message] {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(descriptor, &bytes, bytes.count) > 0 {}
        return queue.withLock { messages in
            var taken: [Message] = []
            swap(&taken, &messages)
            return taken
        }
    }
}
