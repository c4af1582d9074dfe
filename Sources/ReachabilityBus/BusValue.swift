import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// A property value as the objects served here answer it: appended to a reply
/// (or a PropertiesChanged) in its D-Bus type.
enum BusValue: Equatable {
    case u32(UInt32), boolean(Bool), string(String), objectPath(String), objectPaths([String])

    func append(to reply: OpaquePointer?) -> Int32 {
        switch self {
        case var .u32(number):
            return sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "u")), &number)
        case let .boolean(flag):
            var bit: Int32 = flag ? 1 : 0
            return sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "b")), &bit)
        case let .string(text):
            return text.withCString { sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "s")), $0) }
        case let .objectPath(path):
            return path.withCString { sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "o")), $0) }
        case let .objectPaths(paths):
            var result = sd_bus_message_open_container(reply, CChar(UInt8(ascii: "a")), "o")
            for path in paths where result >= 0 {
                result = path.withCString { sd_bus_message_append_basic(reply, CChar(UInt8(ascii: "o")), $0) }
            }
            return result < 0 ? result : sd_bus_message_close_container(reply)
        }
    }
}
