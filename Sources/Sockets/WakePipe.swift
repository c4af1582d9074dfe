#if canImport(Glibc)
import Glibc
#endif

/// How one thread wakes another that sleeps in `poll`: a non-blocking pipe whose
/// read end the sleeper watches (Glibc's module has no eventfd). Signals coalesce:
/// however many arrive before the sleeper drains, it wakes once.
package final class WakePipe: Sendable {
    /// The end to poll for readability.
    package let readEnd: Int32
    private let writeEnd: Int32

    /// - Throws: when the process is out of descriptors.
    package init() throws(SystemCallError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw SystemCallError("pipe", errno: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Wakes the sleeper (a full pipe already will).
    package func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe: the next `poll` sleeps until the next `signal()`.
    package func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &bytes, bytes.count) > 0 {}
    }
}
