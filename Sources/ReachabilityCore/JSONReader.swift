/// Reads a JSON document into a `Decodable` value: the documents reachd sends on
/// every change (a path, an interface change), read by every client. On a client
/// woken from idle, Foundation's `JSONDecoder` took about 80 µs at p50 for one path
/// document, 40 % of its way from the socket to the callback, and 25 µs warm
/// (BENCHMARKS.md §26): its code is large, and a change finds it out of the cache.
/// This reader is the grammar of RFC 8259 and the `Decoder` protocol, nothing
/// else: the values' own `init(from:)` stay where what a document means is
/// decided. It decodes what `JSONDecoder` decodes, to the same values, and
/// refuses what it refuses (DocumentReaderTests' comparison, the `documents`
/// fuzz target); a number is read as the type asks for it, as there. One
/// difference, on purpose: it nests 64 deep, not 512.
package enum JSONReader {
    /// The deepest nesting read. `JSONDecoder` reads 512 levels, and traps (SIGILL)
    /// on a document that ends 513 `[` deep (BENCHMARKS.md §26); a recursive reader
    /// 512 deep can outgrow a small thread's stack. Nothing reachd writes, and no
    /// captive-portal answer, nests past 4; the TOML reader's bound is 64 too.
    package static let depthLimit = 64

    static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        var parser = Parser(bytes: Array(text.utf8))
        let value = try parser.document()
        return try T(from: ValueDecoder(value: value, bytes: parser.bytes))
    }

    /// A scanned value. As in `JSONDecoder`, a string's or a number's text is checked
    /// when a type reads it, not before: the parts of a document nobody reads (a newer
    /// daemon's fields) cost a scan, and refuse only what breaks the structure.
    enum Value {
        case null
        case bool(Bool)
        case string(Text)
        /// `-` or a digit, then digits, signs, points and exponents, unchecked.
        case number(Range<Int>)
        case array([Value])
        case object([(key: Text, value: Value)])

        var kind: String {
            switch self {
            case .null: "null"
            case .bool: "a bool"
            case .number: "a number"
            case .string: "a string"
            case .array: "an array"
            case .object: "an object"
            }
        }
    }

    /// A string's bytes between its quotes; `escaped` when a backslash is among them.
    struct Text {
        let range: Range<Int>
        let escaped: Bool
    }

    struct Parser {
        let bytes: [UInt8]
        var position = 0
        var depth = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func document() throws -> Value {
            let value = try self.value()
            skipSpace()
            guard position == bytes.count else { throw invalid("unexpected text after the document") }
            return value
        }

        private func invalid(_ what: String) -> DecodingError {
            DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "The given data was not valid JSON: \(what) at byte \(position)."))
        }

        private mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        private mutating func value() throws -> Value {
            skipSpace()
            guard position < bytes.count else { throw invalid("the document ends") }
            switch bytes[position] {
            case UInt8(ascii: "{"): return try nested { try $0.object() }
            case UInt8(ascii: "["): return try nested { try $0.array() }
            case UInt8(ascii: "\""): return .string(try text())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default: return try number()
            }
        }

        private mutating func nested(_ body: (inout Parser) throws -> Value) throws -> Value {
            depth += 1
            defer { depth -= 1 }
            guard depth <= JSONReader.depthLimit else { throw invalid("nested too deep") }
            position += 1
            return try body(&self)
        }

        private mutating func literal(_ word: StaticString, _ value: Value) throws -> Value {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count,
                word.withUTF8Buffer({ $0.elementsEqual(bytes[position..<position + count]) })
            else { throw invalid("an unknown word") }
            position += count
            return value
        }

        /// An object from after its brace.
        private mutating func object() throws -> Value {
            var members: [(key: Text, value: Value)] = []
            try list(closing: UInt8(ascii: "}")) { parser in
                guard parser.position < parser.bytes.count, parser.bytes[parser.position] == UInt8(ascii: "\"") else {
                    throw parser.invalid("a key that is not a string")
                }
                let key = try parser.text()
                parser.skipSpace()
                guard parser.position < parser.bytes.count, parser.bytes[parser.position] == UInt8(ascii: ":") else {
                    throw parser.invalid("no colon after a key")
                }
                parser.position += 1
                members.append((key, try parser.value()))
            }
            return .object(members)
        }

        /// An array from after its bracket.
        private mutating func array() throws -> Value {
            var elements: [Value] = []
            try list(closing: UInt8(ascii: "]")) { elements.append(try $0.value()) }
            return .array(elements)
        }

        /// The elements of an object or an array, separated by commas, up to and past
        /// `closing`. A comma before it is let through, as `JSONDecoder` lets it
        /// through; an empty element is not.
        private mutating func list(closing: UInt8, _ element: (inout Parser) throws -> Void) throws {
            while true {
                skipSpace()
                // Empty, or a comma before the end.
                if position < bytes.count, bytes[position] == closing {
                    position += 1
                    return
                }
                try element(&self)
                skipSpace()
                guard position < bytes.count else { throw invalid("an object or array that does not end") }
                position += 1
                switch bytes[position - 1] {
                case UInt8(ascii: ","): continue
                case closing: return
                default: throw invalid("no comma or end after an element")
                }
            }
        }

        /// A string from its opening quote to the one that ends it; escapes are read later.
        private mutating func text() throws -> Text {
            position += 1
            let start = position
            var escaped = false
            while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: "\""):
                    defer { position += 1 }
                    return Text(range: start..<position, escaped: escaped)
                case UInt8(ascii: "\\"):
                    escaped = true
                    guard position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                        position += 2
                        continue
                    }
                    // A `\u` takes the four bytes after it, checked when read, but never a quote:
                    // JSONDecoder's scan is so.
                    guard position + 6 <= bytes.count, !bytes[position + 2..<position + 6].contains(UInt8(ascii: "\"")) else {
                        throw invalid("a \\u escape cut short")
                    }
                    position += 6
                default:
                    position += 1
                }
            }
            throw invalid("a string that does not end")
        }

        private mutating func number() throws -> Value {
            let start = position
            guard bytes[position] == UInt8(ascii: "-") || Self.isDigit(bytes[position]) else { throw invalid("an unexpected character") }
            position += 1
            while position < bytes.count, Self.isNumberByte(bytes[position]) { position += 1 }
            return .number(start..<position)
        }

        static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

        private static func isNumberByte(_ byte: UInt8) -> Bool {
            isDigit(byte) || [UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(byte)
        }
    }

    /// A string's or a number's text, checked when a type reads it. The failure is a
    /// sentence; the decoder adds where in the document it was.
    enum Content {
        struct Invalid: Error {
            let description: String
        }

        static func string(_ text: Text, in bytes: [UInt8]) throws(Invalid) -> String {
            guard text.escaped else {
                try checkPlain(text, in: bytes)
                return String(decoding: bytes[text.range], as: UTF8.self)
            }
            let range = text.range
            var string: [UInt8] = []
            string.reserveCapacity(range.count)
            var position = range.lowerBound
            while position < range.upperBound {
                let byte = bytes[position]
                position += 1
                guard byte == UInt8(ascii: "\\") else {
                    guard byte >= 0x20 else { throw Invalid(description: "a control character in a string") }
                    string.append(byte)
                    continue
                }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): string.append(escape)
                case UInt8(ascii: "b"): string.append(0x08)
                case UInt8(ascii: "f"): string.append(0x0C)
                case UInt8(ascii: "n"): string.append(0x0A)
                case UInt8(ascii: "r"): string.append(0x0D)
                case UInt8(ascii: "t"): string.append(0x09)
                case UInt8(ascii: "u"): string.append(contentsOf: String(try unicodeEscape(bytes, &position, end: range.upperBound)).utf8)
                default: throw Invalid(description: "an unknown escape")
                }
            }
            return String(decoding: string, as: UTF8.self)
        }

        /// Text without escapes is the string as it is written, unless a control character is in it.
        static func checkPlain(_ text: Text, in bytes: [UInt8]) throws(Invalid) {
            guard !bytes[text.range].contains(where: { $0 < 0x20 }) else { throw Invalid(description: "a control character in a string") }
        }

        /// `\uXXXX` after its `\u`, with the low half that must follow a high surrogate.
        private static func unicodeEscape(_ bytes: [UInt8], _ position: inout Int, end: Int) throws(Invalid) -> Character {
            let unit = try hexUnit(bytes, &position, end: end)
            switch unit {
            case 0xD800..<0xDC00:
                guard position + 2 <= end, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw Invalid(description: "a high surrogate alone")
                }
                position += 2
                let low = try hexUnit(bytes, &position, end: end)
                guard (0xDC00..<0xE000).contains(low) else { throw Invalid(description: "a high surrogate without its low half") }
                return Character(Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!)
            case 0xDC00..<0xE000:
                throw Invalid(description: "a low surrogate alone")
            default:
                return Character(Unicode.Scalar(unit)!)
            }
        }

        private static func hexUnit(_ bytes: [UInt8], _ position: inout Int, end: Int) throws(Invalid) -> UInt32 {
            guard position + 4 <= end else { throw Invalid(description: "a short \\u escape") }
            var unit: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                guard let digit = hexDigit(byte) else { throw Invalid(description: "a \\u escape that is not hexadecimal") }
                unit = unit << 4 | digit
            }
            position += 4
            return unit
        }

        private static func hexDigit(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }

        /// A number's parts by RFC 8259's grammar, `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`;
        /// nil when the text is not one.
        static func number(_ range: Range<Int>, in bytes: [UInt8]) -> (negative: Bool, digits: [UInt8], exponent: Int)? {
            var position = range.lowerBound
            func digits() -> ArraySlice<UInt8> {
                let start = position
                while position < range.upperBound, Parser.isDigit(bytes[position]) { position += 1 }
                return bytes[start..<position]
            }
            let negative = bytes[position] == UInt8(ascii: "-")
            if negative { position += 1 }
            let integer = digits()
            guard !integer.isEmpty, integer.count == 1 || integer.first != UInt8(ascii: "0") else { return nil }
            var fraction: ArraySlice<UInt8> = []
            if position < range.upperBound, bytes[position] == UInt8(ascii: ".") {
                position += 1
                fraction = digits()
                guard !fraction.isEmpty else { return nil }
            }
            var exponent = 0
            if position < range.upperBound, bytes[position] | 0x20 == UInt8(ascii: "e") {
                position += 1
                let sign = position < range.upperBound ? bytes[position] : 0
                if sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { position += 1 }
                let written = digits()
                guard !written.isEmpty else { return nil }
                // Six digits are more than any exponent that leaves a finite or nonzero value.
                let value = Int(String(decoding: written.drop { $0 == UInt8(ascii: "0") }.prefix(6), as: UTF8.self)) ?? 0
                exponent = sign == UInt8(ascii: "-") ? -value : value
            }
            guard position == range.upperBound else { return nil }
            return (negative, Array(integer) + fraction, exponent - fraction.count)
        }

        /// The number as a `T` when it is a whole number `T` holds, however written
        /// (`2`, `2.0`, `0.2e1`), exactly: decimal digits, not through a `Double`.
        static func integer<T: FixedWidthInteger>(_ range: Range<Int>, in bytes: [UInt8], as type: T.Type) -> T? {
            guard let number = number(range, in: bytes) else { return nil }
            var (digits, exponent) = (Array(number.digits.drop { $0 == UInt8(ascii: "0") }), number.exponent)
            while exponent < 0, digits.last == UInt8(ascii: "0") {
                digits.removeLast()
                exponent += 1
            }
            if digits.isEmpty { return 0 }
            guard exponent >= 0, digits.count + exponent <= 40 else { return nil }
            digits += repeatElement(UInt8(ascii: "0"), count: exponent)
            if number.negative { digits.insert(UInt8(ascii: "-"), at: 0) }
            return T(String(decoding: digits, as: UTF8.self))
        }

        static func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(
            _ range: Range<Int>, in bytes: [UInt8], as type: T.Type
        ) -> T? {
            guard number(range, in: bytes) != nil, let value = T(String(decoding: bytes[range], as: UTF8.self)), value.isFinite else {
                return nil
            }
            return value
        }
    }
}
