import CNetlink
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A failure of a netlink operation, with the operation that failed and why.
package enum NetlinkError: Error, Hashable, CustomStringConvertible {
    /// A system call failed with `errno`.
    case system(operation: String, errno: Int32)
    /// libnl returned one of its own `NLE_*` codes.
    case libnl(operation: String, code: Int32)
    /// The kernel answered with something we could not make sense of.
    case malformed(operation: String, detail: String)
    /// The kernel did not answer within the socket timeout.
    case timedOut(operation: String)

    package var description: String {
        switch self {
        case let .system(operation, errno):
            return "\(SystemCallError(operation, errno: Errno(rawValue: errno)))"
        case let .libnl(operation, code):
            return "\(operation): \(String(cString: nl_geterror(code)))"
        case let .malformed(operation, detail):
            return "\(operation): \(detail)"
        case let .timedOut(operation):
            return "\(operation): the kernel did not answer"
        }
    }

    static func lastSystemError(_ operation: String) -> NetlinkError {
        .system(operation: operation, errno: Glibc.errno)
    }
}
