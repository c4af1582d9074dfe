import CSystemd
import CSystemdShim

#if canImport(Glibc)
import Glibc
#endif

/// A method call being handled: its message, and where an error is set.
package struct BusCall: @unchecked Sendable {
    package let message: OpaquePointer?
    package let error: UnsafeMutablePointer<sd_bus_error>?

    /// The user who sent it: on a bus, the broker's word; on the private socket, the
    /// peer's (SO_PEERCRED). Nil when neither says.
    package var senderUID: uid_t? {
        var uid: uid_t = 0
        return reachd_bus_sender_euid(message, &uid) >= 0 ? uid : nil
    }

    /// The sender's unique name on a bus (nil on the private socket, which has none).
    package var sender: String? { sd_bus_message_get_sender(message).map { String(cString: $0) } }

    /// The connection it came on.
    package var bus: OpaquePointer? { sd_bus_message_get_bus(message) }

    /// Its one or two string arguments.
    package func strings() -> (first: String, second: String)? {
        var first: UnsafePointer<CChar>?
        var second: UnsafePointer<CChar>?
        guard reachd_bus_read(message, &first, &second) >= 0, let first, let second else { return nil }
        return (String(cString: first), String(cString: second))
    }

    package func string() -> String? {
        var first: UnsafePointer<CChar>?
        guard reachd_bus_read(message, &first, nil) >= 0, let first else { return nil }
        return String(cString: first)
    }

    /// Answers now with one string.
    package func reply(_ answer: String) -> Int32 { reachd_bus_reply_string(message, answer) }

    /// Answers now with nothing.
    package func replyEmpty() -> Int32 { reachd_bus_reply_empty(message) }

    /// Answers now with an error.
    package func fail(_ failure: BusMethodError) -> Int32 { sd_bus_error_set(error, failure.name, failure.message) }

    /// A reply given after the handler returned (the handler then returns 1): the call
    /// is kept until it is sent. `empty`: the method returns nothing, whatever the success carries.
    package func later(empty: Bool = false) -> (Result<String, BusMethodError>) -> Void {
        let call = sd_bus_message_ref(message)
        return { result in
            switch result {
            case let .success(answer):
                _ = empty ? reachd_bus_reply_empty(call) : reachd_bus_reply_string(call, answer)
            case let .failure(failure):
                var error = sd_bus_error()
                _ = sd_bus_error_set(&error, failure.name, failure.message)
                _ = sd_bus_reply_method_error(call, &error)
                sd_bus_error_free(&error)
            }
            sd_bus_message_unref(call)
        }
    }
}

/// A method's error as the caller sees it: a D-Bus error name and a message.
package struct BusMethodError: Error, Sendable {
    package let name: String
    package let message: String

    package init(_ name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    package static func failed(_ message: String) -> BusMethodError { .init("org.freedesktop.DBus.Error.Failed", message) }
    package static func accessDenied(_ message: String) -> BusMethodError { .init("org.freedesktop.DBus.Error.AccessDenied", message) }
    package static func invalidArgs(_ message: String) -> BusMethodError { .init("org.freedesktop.DBus.Error.InvalidArgs", message) }
    package static func limitsExceeded(_ message: String) -> BusMethodError { .init("org.freedesktop.DBus.Error.LimitsExceeded", message) }
}
