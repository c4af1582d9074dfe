/// Writes JSON directly, keys in the order given. Path documents are written on
/// every change (a flap storm writes thousands): Foundation's JSONEncoder spent
/// four times the CPU of the whole monitor loop there, and sorts the keys.
struct JSONWriter {
    private(set) var text = ""

    init() { text.reserveCapacity(1024) }

    mutating func object(_ body: (inout ObjectWriter) -> Void) {
        ObjectWriter.write(into: &text, body)
    }

    /// A top-level array of objects.
    mutating func array<Element>(_ elements: [Element], _ body: (inout ObjectWriter, Element) -> Void) {
        text.append("[")
        for (index, element) in elements.enumerated() {
            if index > 0 { text.append(",") }
            ObjectWriter.write(into: &text) { body(&$0, element) }
        }
        text.append("]")
    }

    struct ObjectWriter {
        private(set) var text: String
        private var first = true

        /// Appends `{…}` to `text`; the writer works on the text itself, not a copy.
        static func write(into text: inout String, _ body: (inout ObjectWriter) -> Void) {
            text.append("{")
            var writer = ObjectWriter(text: text)
            text = ""
            body(&writer)
            text = writer.text
            text.append("}")
        }

        private init(text: String) { self.text = text }

        private mutating func key(_ key: String) {
            if !first { text.append(",") }
            first = false
            JSONWriter.appendString(key, to: &text)
            text.append(":")
        }

        mutating func string(_ name: String, _ value: String?) {
            key(name)
            if let value { JSONWriter.appendString(value, to: &text) } else { text.append("null") }
        }

        mutating func bool(_ name: String, _ value: Bool) {
            key(name)
            text.append(value ? "true" : "false")
        }

        mutating func int(_ name: String, _ value: Int) {
            key(name)
            text.append(String(value))
        }

        mutating func optionalBool(_ name: String, _ value: Bool?) {
            key(name)
            text.append(value.map { $0 ? "true" : "false" } ?? "null")
        }

        mutating func optionalInt(_ name: String, _ value: Int?) {
            key(name)
            text.append(value.map { String($0) } ?? "null")
        }

        mutating func strings(_ name: String, _ values: [String]) {
            key(name)
            text.append("[")
            for (index, value) in values.enumerated() {
                if index > 0 { text.append(",") }
                JSONWriter.appendString(value, to: &text)
            }
            text.append("]")
        }

        /// A nested object, or null.
        mutating func object(_ name: String, _ present: Bool, _ body: (inout ObjectWriter) -> Void) {
            key(name)
            if present { Self.write(into: &text, body) } else { text.append("null") }
        }

        /// An array of objects.
        mutating func array<Element>(_ name: String, _ elements: [Element], _ body: (inout ObjectWriter, Element) -> Void) {
            key(name)
            text.append("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { text.append(",") }
                Self.write(into: &text) { body(&$0, element) }
            }
            text.append("]")
        }
    }

    /// RFC 8259 string escaping: quotes, backslash and control characters.
    static func appendString(_ value: String, to text: inout String) {
        text.append("\"")
        // Names, kinds and addresses never need escaping: append them whole.
        guard value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            text.append(value)
            text.append("\"")
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count + 8)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        text.append(String(decoding: bytes, as: UTF8.self))
        text.append("\"")
    }
}
