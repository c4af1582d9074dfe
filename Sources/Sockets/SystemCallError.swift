#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed, with its errno: what the call and the kernel said.
package struct SystemCallError: Error, CustomStringConvertible, Sendable {
    package let call: String
    package let errno: Int32

    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    package var description: String { "\(call): \(String(cString: strerror(errno)))" }
}
