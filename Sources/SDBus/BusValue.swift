import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A property value as the objects served here answer it: appended to a reply
/// (or a PropertiesChanged) in its D-Bus type.
package enum BusValue: Equatable, Sendable {
    case u32(UInt32), u64(UInt64), i64(Int64), boolean(Bool), string(String), strings([String]), objectPath(String), objectPaths([String])

    /// Its D-Bus type, as a variant holding it is written.
    package var signature: StaticString {
        switch self {
        case .u32: "u"
        case .u64: "t"
        case .i64: "x"
        case .boolean: "b"
        case .string: "s"
        case .strings: "as"
        case .objectPath: "o"
        case .objectPaths: "ao"
        }
    }

    package func append(to reply: OpaquePointer?) -> Int32 {
        switch self {
        case var .u32(number):
            return sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "u")), &number)
        case var .u64(number):
            return sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "t")), &number)
        case var .i64(number):
            return sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "x")), &number)
        case let .boolean(flag):
            var bit: Int32 = flag ? 1 : 0
            return sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "b")), &bit)
        case let .string(text):
            return text.withCString { sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "s")), $0) }
        case let .objectPath(path):
            return path.withCString { sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "o")), $0) }
        case let .objectPaths(paths):
            return Self.append(paths, as: "o", to: reply)
        case let .strings(texts):
            return Self.append(texts, as: "s", to: reply)
        }
    }

    private static func append(_ texts: [String], as type: Character, to reply: OpaquePointer?) -> Int32 {
        var result = sd_bus_message_open_container(reply, CChar(UInt8(ascii: "a")), String(type))
        for text in texts where result >= 0 {
            result = text.withCString { sd_bus_message_append_basic(reply, CChar(type.asciiValue!), $0) }
        }
        return result < 0 ? result : sd_bus_message_close_container(reply)
    }
}

/// Properties whose values follow a value of `Values`: each one's name, D-Bus type and value.
package typealias PropertyTable<Values> = [(name: String, signature: String, value: @Sendable (Values) -> BusValue)]

/// The properties of `names` whose values (in the same order) differ between `before` and
/// `now`, with their values now: what PropertiesChanged carries.
package func changedProperties(_ names: [String], from before: [BusValue], to now: [BusValue]) -> [(name: String, value: BusValue)] {
    zip(names, zip(before, now)).compactMap { name, values in values.0 == values.1 ? nil : (name, values.1) }
}
