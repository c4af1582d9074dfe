import FoundationEssentials

/// Writes JSON directly, keys in the order given. Path documents are written on
/// every change (a flap storm writes thousands): Foundation's JSONEncoder spent
/// four times the CPU of the whole monitor loop there, and sorts the keys. The
/// text is gathered as UTF-8 bytes and made a `String` once: appending to a
/// `String` piece by piece cost a third of the daemon's instructions per change
/// (BENCHMARKS.md §23). Keys and literals are static text, numbers written digit
/// by digit, and each piece goes in with one reservation of the buffer: a document
/// is on the path from the kernel's message to `reachctl watch --direct`'s line
/// (BENCHMARKS.md §29, §32).
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    /// A path document with a few interfaces fits.
    private static let initialCapacity = 2048

    init() { bytes.reserveCapacity(Self.initialCapacity) }

    /// A writer that takes `bytes` over, emptied but with the memory they have, and
    /// leaves the caller an empty array: the writer's buffer is then its own, and its
    /// appends do not copy it.
    init(reusing bytes: inout [UInt8]) {
        swap(&self.bytes, &bytes)
        self.bytes.removeAll(keepingCapacity: true)
        if self.bytes.capacity < Self.initialCapacity { self.bytes.reserveCapacity(Self.initialCapacity) }
    }

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
        /// The closing brace goes in while the writer still holds them alone: appended
        /// after handing them back, with the writer alive, it copied the whole document
        /// (copy on write) at the end of every nested object and array element.
        static func write(into bytes: inout [UInt8], _ body: (inout ObjectWriter) -> Void) {
            bytes.append(UInt8(ascii: "{"))
            var writer = ObjectWriter(bytes: bytes)
            bytes = []
            body(&writer)
            writer.bytes.append(UInt8(ascii: "}"))
            swap(&bytes, &writer.bytes)
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

        /// `,"name":` (no comma before the first field) and `literal` after it, in one reservation:
        /// a document has about 60 fields, and each `Array.append` is a call to its uniqueness and
        /// capacity checks under `-Osize`. Names are the documents' own, written in the source:
        /// nothing in them to escape.
        private mutating func field(_ name: StaticString, _ literal: StaticString = "") {
            let comma = !first
            first = false
            name.withUTF8Buffer { name in
                literal.withUTF8Buffer { literal in
                    bytes.append(addingCapacity: name.count + literal.count + 4) { out in
                        if comma { out.append(UInt8(ascii: ",")) }
                        out.append(UInt8(ascii: "\""))
                        for byte in name { out.append(byte) }
                        out.append(UInt8(ascii: "\""))
                        out.append(UInt8(ascii: ":"))
                        for byte in literal { out.append(byte) }
                    }
                }
            }
        }

        mutating func string(_ name: StaticString, _ value: String?) {
            guard let value else { return field(name, "null") }
            field(name)
            JSONWriter.appendString(value, to: &bytes)
        }

        /// An ISO 8601 time in UTC, as `UTCTimestamp.format` writes it, or null.
        mutating func timestamp(_ name: StaticString, _ value: Date?) {
            guard let value else { return field(name, "null") }
            field(name, "\"")
            UTCTimestamp.append(value, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }

        mutating func bool(_ name: StaticString, _ value: Bool) {
            field(name, value ? "true" : "false")
        }

        mutating func int(_ name: StaticString, _ value: Int) {
            field(name)
            JSONWriter.appendDecimal(value, to: &bytes)
        }

        mutating func optionalBool(_ name: StaticString, _ value: Bool?) {
            field(name, value.map { $0 ? "true" : "false" } ?? "null")
        }

        mutating func optionalInt(_ name: StaticString, _ value: Int?) {
            guard let value else { return field(name, "null") }
            int(name, value)
        }

        mutating func strings(_ name: StaticString, _ values: [String]) {
            field(name, "[")
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(value, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        }

        /// A nested object, or null.
        mutating func object(_ name: StaticString, _ present: Bool, _ body: (inout ObjectWriter) -> Void) {
            guard present else { return field(name, "null") }
            field(name)
            Self.write(into: &bytes, body)
        }

        /// An array of objects.
        mutating func array<Element>(_ name: StaticString, _ elements: [Element], _ body: (inout ObjectWriter, Element) -> Void) {
            field(name)
            Self.writeArray(elements, into: &bytes, body)
        }
    }

    private static let powersOfTen: [UInt] = (0..<20).map { exponent in (0..<exponent).reduce(1) { power, _ in power * 10 } }

    /// `value` in decimal, at least `minimumDigits` of them (zeros first), without a `String` in between.
    static func appendDecimal(_ value: Int, minimumDigits: Int = 1, to bytes: inout [UInt8]) {
        let magnitude = value.magnitude
        var count = 1
        while count < powersOfTen.count, magnitude >= powersOfTen[count] { count += 1 }
        bytes.append(addingCapacity: max(count, minimumDigits) + 1) { out in
            if value < 0 { out.append(UInt8(ascii: "-")) }
            for _ in count..<max(count, minimumDigits) { out.append(UInt8(ascii: "0")) }
            for exponent in (0..<count).reversed() {
                out.append(UInt8(ascii: "0") + UInt8(magnitude / powersOfTen[exponent] % 10))
            }
        }
    }

    /// RFC 8259 string escaping: quotes, backslash and control characters. A string
    /// with none of them (nearly all) is copied in one reservation; otherwise the runs
    /// between them are copied whole.
    static func appendString(_ value: String, to bytes: inout [UInt8]) {
        var value = value
        value.withUTF8 { utf8 in
            guard utf8.contains(where: needsEscaping) else {
                return bytes.append(addingCapacity: utf8.count + 2) { out in
                    out.append(UInt8(ascii: "\""))
                    for byte in utf8 { out.append(byte) }
                    out.append(UInt8(ascii: "\""))
                }
            }
            bytes.append(UInt8(ascii: "\""))
            var run = 0
            for index in utf8.indices where needsEscaping(utf8[index]) {
                bytes.append(contentsOf: utf8.extracting(run..<index))
                run = index + 1
                appendEscaped(utf8[index], to: &bytes)
            }
            bytes.append(contentsOf: utf8.extracting(run...))
            bytes.append(UInt8(ascii: "\""))
        }
    }

    private static func needsEscaping(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
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
