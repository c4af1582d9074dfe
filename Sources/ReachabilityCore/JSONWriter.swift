/// Writes JSON directly, keys in the order given. Path documents are written on
/// every change (a flap storm writes thousands): Foundation's JSONEncoder spent
/// four times the CPU of the whole monitor loop there, and sorts the keys. The
/// text is gathered as UTF-8 bytes and made a `String` once: appending to a
/// `String` piece by piece cost a third of the daemon's instructions per change
/// (BENCHMARKS.md §23).
struct JSONWriter {
    private var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(2048) }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func object(_ body: (inout ObjectWriter) -> Void) {
        ObjectWriter.write(into: &bytes, body)
    }

    /// A top-level array of objects.
    mutating func array<Element>(_ elements: [Element], _ body: (inout ObjectWriter, Element) -> Void) {
        ObjectWriter.writeArray(elements, into: &bytes, body)
    }

    struct ObjectWriter {
        private var bytes: [UInt8]
        private var first = true

        /// Appends `{…}` to `bytes`; the writer works on the bytes themselves, not a copy.
        static func write(into bytes: inout [UInt8], _ body: (inout ObjectWriter) -> Void) {
            bytes.append(UInt8(ascii: "{"))
            var writer = ObjectWriter(bytes: bytes)
            bytes = []
            body(&writer)
            bytes = writer.bytes
            bytes.append(UInt8(ascii: "}"))
        }

        static func writeArray<Element>(
            _ elements: [Element], into bytes: inout [UInt8], _ body: (inout ObjectWriter, Element) -> Void
        ) {
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(into: &bytes) { body(&$0, element) }
            }
            bytes.append(UInt8(ascii: "]"))
        }

        private init(bytes: [UInt8]) { self.bytes = bytes }

        private mutating func key(_ key: String) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            JSONWriter.appendString(key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
        }

        mutating func string(_ name: String, _ value: String?) {
            key(name)
            if let value { JSONWriter.appendString(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        }

        mutating func bool(_ name: String, _ value: Bool) {
            key(name)
            bytes.append(contentsOf: (value ? "true" : "false").utf8)
        }

        mutating func int(_ name: String, _ value: Int) {
            key(name)
            bytes.append(contentsOf: String(value).utf8)
        }

        mutating func optionalBool(_ name: String, _ value: Bool?) {
            key(name)
            bytes.append(contentsOf: (value.map { $0 ? "true" : "false" } ?? "null").utf8)
        }

        mutating func optionalInt(_ name: String, _ value: Int?) {
            key(name)
            bytes.append(contentsOf: (value.map { String($0) } ?? "null").utf8)
        }

        mutating func strings(_ name: String, _ values: [String]) {
            key(name)
            bytes.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(value, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        }

        /// A nested object, or null.
        mutating func object(_ name: String, _ present: Bool, _ body: (inout ObjectWriter) -> Void) {
            key(name)
            if present { Self.write(into: &bytes, body) } else { bytes.append(contentsOf: "null".utf8) }
        }

        /// An array of objects.
        mutating func array<Element>(_ name: String, _ elements: [Element], _ body: (inout ObjectWriter, Element) -> Void) {
            key(name)
            Self.writeArray(elements, into: &bytes, body)
        }
    }

    /// RFC 8259 string escaping: quotes, backslash and control characters. The
    /// runs between them (most strings are one run) are copied whole.
    static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var run = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: utf8[run..<index])
                run = index + 1
                appendEscaped(byte, to: &bytes)
            }
            bytes.append(contentsOf: utf8[run...])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func appendEscaped(_ byte: UInt8, to bytes: inout [UInt8]) {
        let backslash = UInt8(ascii: "\\")
        switch byte {
        case UInt8(ascii: "\n"): bytes += [backslash, UInt8(ascii: "n")]
        case UInt8(ascii: "\r"): bytes += [backslash, UInt8(ascii: "r")]
        case UInt8(ascii: "\t"): bytes += [backslash, UInt8(ascii: "t")]
        case 0..<0x20:
            let hex = { (digit: UInt8) in digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10 }
            bytes += [backslash, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex(byte >> 4), hex(byte & 0xF)]
        default: bytes += [backslash, byte]
        }
    }
}
