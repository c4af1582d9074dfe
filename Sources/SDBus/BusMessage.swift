import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A received message (a signal or a reply), read in order, one argument at a time.
package struct BusMessage {
    let raw: OpaquePointer

    init(_ raw: OpaquePointer) { self.raw = raw }

    /// The D-Bus error name of an error reply; nil for anything else.
    package var errorName: String? {
        guard let error = sd_bus_message_get_error(raw), let name = error.pointee.name else { return nil }
        return String(cString: name)
    }

    package var errorMessage: String? { sd_bus_message_get_error(raw)?.pointee.message.map { String(cString: $0) } }

    /// An error reply as the error of the call `operation` names; nil for anything else.
    package func error(of operation: String) -> BusError? {
        guard let name = errorName else { return nil }
        return BusError(operation, code: sd_bus_message_get_errno(raw), name: name, message: errorMessage)
    }

    package var serial: UInt64 { BusConnection.serial(of: raw) }

    package func string() -> String? { text("s") }
    package func objectPath() -> String? { text("o") }

    package func uint32() -> UInt32? {
        var value: UInt32 = 0
        return sd_bus_message_read_basic(raw, CChar(UInt8(ascii: "u")), &value) > 0 ? value : nil
    }

    package func bool() -> Bool? {
        var value: Int32 = 0
        return sd_bus_message_read_basic(raw, CChar(UInt8(ascii: "b")), &value) > 0 ? value != 0 : nil
    }

    package func int32() -> Int32? {
        var value: Int32 = 0
        return sd_bus_message_read_basic(raw, CChar(UInt8(ascii: "i")), &value) > 0 ? value : nil
    }

    /// An array of bytes (`ay`).
    package func bytes() -> [UInt8]? {
        var pointer: UnsafeRawPointer?
        var size = 0
        guard sd_bus_message_read_array(raw, CChar(UInt8(ascii: "y")), &pointer, &size) >= 0 else { return nil }
        guard let pointer, size > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: size))
    }

    /// Enters a variant (`v`), struct (`r`) or array (`a`) of the given contents; false
    /// when the next argument is not one (or, for an array, when it has no more elements).
    package func enter(_ type: Character, _ contents: String) -> Bool {
        sd_bus_message_enter_container(raw, CChar(type.asciiValue!), contents) > 0
    }

    /// Leaves the container entered last.
    package func exit() { sd_bus_message_exit_container(raw) }

    private func text(_ type: Character) -> String? {
        var value: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(raw, CChar(type.asciiValue!), &value) > 0, let value else { return nil }
        return String(cString: value)
    }

    /// An argument of a call.
    package enum Argument {
        case string(String), uint32(UInt32)

        func append(to message: OpaquePointer?) -> Int32 {
            switch self {
            case let .string(text): text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
            case var .uint32(number): sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &number)
            }
        }
    }
}
