import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// An sd-bus or sd-event call that failed.
package struct BusError: Error, CustomStringConvertible, Sendable {
    package let operation: String
    package let code: Int32
    /// The D-Bus error name and message of a failed call, when the peer sent one.
    package let name: String?
    package let message: String?

    package init(_ operation: String, code: Int32, name: String? = nil, message: String? = nil) {
        self.operation = operation
        self.code = code
        self.name = name
        self.message = message
    }

    /// What the daemon said, for a method that failed there: "Reload is for root only (AccessDenied)".
    package var remoteMessage: String? {
        guard let message else { return nil }
        return name.map { "\(message) (\($0.split(separator: ".").last ?? ""))" } ?? message
    }

    package var description: String {
        remoteMessage.map { "\(operation): \($0)" } ?? "\(SystemCallError(operation, errno: Errno(rawValue: code)))"
    }
}

@discardableResult
package func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(BusError) -> Int32 {
    guard result >= 0 else { throw BusError(operation(), code: -result) }
    return result
}
