@_exported import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed: which, on what, and the kernel's `Errno` (swift-system's).
package struct SystemCallError: Error, CustomStringConvertible, Sendable {
    /// The call and what it was for: "pipe", "binding /run/reachd/socket".
    package let call: String
    package let errno: Errno

    package init(_ call: String, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    /// The calling thread's `errno`, just after the call that failed.
    package init(_ call: String) {
        self.init(call, errno: Errno(rawValue: Glibc.errno))
    }

    package var description: String { "\(call): \(errno)" }
}

/// Runs `call` again while it fails with EINTR (a signal arrived first) — the one retry
/// loop of every system call that can be interrupted and is not swift-system's
/// (poll, recv, waitpid; swift-system's reads and writes take `retryOnInterrupt`).
/// Returns the call's own result: -1 with `errno` set on any other failure.
@inlinable
package func retryingOnInterrupt<Result: FixedWidthInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result == -1 && Glibc.errno == EINTR { continue }
        return result
    }
}
