import FoundationEssentials

/// Writes JSON directly, keys in the order given. Path documents are written on
/// every change (a flap storm writes thousands): Foundation's JSONEncoder spent
/// four times the CPU of the whole monitor loop there, and sorts the keys. The
/// text is gathered as UTF-8 bytes and made a `String` once: appending to a
/// `String` piece by piece cost a third of the daemon's instructions per change
/// (BENCHMARKS.md §23). Keys and literals are static text copied whole, numbers
/// written digit by digit: a document is on the path from the kernel's message
/// to `reachctl watch --direct`'s line (BENCHMARKS.md §29).
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(2048) }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func object(_ body: (inout ObjectWriter) -> Void) {
        ObjectWriter.write(into: &bytes, body)
    }

    /// A top-level array of objects.
    mutating func array<Element>(_ elements: [Element], _ body: (inout ObjectWriter, Element) -> Void) {
        ObjectWriter.writeArray(elements, into: &bytes, body)
    }

    /// Ends the text with a newline: a line of `reachctl watch --json`.
    mutating func newline() { bytes.append(UInt8(ascii: "\n")) }

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

        /// Keys are the documents' own names, written in the source: nothing in them to escape.
        private mutating func key(_ key: StaticString) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes.append(UInt8(ascii: "\""))
            JSONWriter.append(key, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
            bytes.append(UInt8(ascii: ":"))
        }

        mutating func string(_ name: StaticString, _ value: String?) {
            key(name)
            if let value { JSONWriter.appendString(value, to: &bytes) } else { JSONWriter.append("null", to: &bytes) }
        }

        /// An ISO 8601 time in UTC, as `UTCTimestamp.format` writes it, or null.
        mutating func timestamp(_ name: StaticString, _ value: Date?) {
            key(name)
            guard let value else { return JSONWriter.append("null", to: &bytes) }
            bytes.append(UInt8(ascii: "\""))
            UTCTimestamp.append(value, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }

        mutating func bool(_ name: StaticString, _ value: Bool) {
            key(name)
            JSONWriter.append(value ? "true" : "false", to: &bytes)
        }

        mutating func int(_ name: StaticString, _ value: Int) {
            key(name)
            JSONWriter.appendDecimal(value, to: &bytes)
        }

        mutating func optionalBool(_ name: StaticString, _ value: Bool?) {
            key(name)
            JSONWriter.append(value.map { $0 ? "true" : "false" } ?? "null", to: &bytes)
        }

        mutating func optionalInt(_ name: StaticString, _ value: Int?) {
            key(name)
            if let value { JSONWriter.appendDecimal(value, to: &bytes) } else { JSONWriter.append("null", to: &bytes) }
        }

        mutating func strings(_ name: StaticString, _ values: [String]) {
            key(name)
            bytes.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(value, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        }

        /// A nested object, or null.
        mutating func object(_ name: StaticString, _ present: Bool, _ body: (inout ObjectWriter) -> Void) {
            key(name)
            if present { Self.write(into: &bytes, body) } else { JSONWriter.append("null", to: &bytes) }
        }

        /// An array of objects.
        mutating func array<Element>(_ name: StaticString, _ elements: [Element], _ body: (inout ObjectWriter, Element) -> Void) {
            key(name)
            Self.writeArray(elements, into: &bytes, body)
        }
    }

    static func append(_ text: StaticString, to bytes: inout [UInt8]) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `value` in decimal, at least `minimumDigits` of them (zeros first), without a `String` in between.
    static func appendDecimal(_ value: Int, minimumDigits: Int = 1, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        var magnitude = value.magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0 || bytes.count - start < minimumDigits
        bytes[start...].reverse()
    }

    /// RFC 8259 string escaping: quotes, backslash and control characters. The
    /// runs between them (most strings are one run) are copied whole.
    static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var run = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: utf8.extracting(run..<index))
                run = index + 1
                appendEscaped(byte, to: &bytes)
            }
            bytes.append(contentsOf: utf8.extracting(run...))
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
