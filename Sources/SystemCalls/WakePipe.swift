import CLinuxShim

#if canImport(Glibc)
import Glibc
#endif

/// How one thread wakes another that sleeps in `poll`: a non-blocking pipe whose
/// read end the sleeper watches (Glibc's module has no eventfd). Signals coalesce:
/// however many arrive before the sleeper drains, it wakes once.
package final class WakePipe: Sendable {
    /// The end to poll for readability.
    package let readEnd: FileDescriptor
    private let writeEnd: FileDescriptor

    /// - Throws: when the process is out of descriptors.
    package init() throws(SystemCallError) {
        var ends: [Int32] = [0, 0]
        guard reachd_pipe(&ends) == 0 else { throw SystemCallError("pipe2") }
        readEnd = FileDescriptor(rawValue: ends[0])
        writeEnd = FileDescriptor(rawValue: ends[1])
    }

    deinit {
        try? readEnd.close()
        try? writeEnd.close()
    }

    /// Wakes the sleeper (a full pipe already will).
    package func signal() {
        _ = try? writeEnd.writeAll([1])
    }

    /// Empties the pipe: the next `poll` sleeps until the next `signal()`.
    package func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while let count = try? bytes.withUnsafeMutableBytes({ try readEnd.read(into: $0) }), count > 0 {}
    }
}
