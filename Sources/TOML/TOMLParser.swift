/// Reads TOML 1.0 documents, keeping the line of every value so that a schema
/// check can name the place of a bad value.
public enum TOML {
    /// Parses `text`; `file` names it in errors.
    public static func parse(_ text: String, file: String = "<input>") throws(TOMLError) -> TOMLTable {
        var parser = Parser(text: text, file: file)
        return try parser.parseDocument()
    }
}

private struct Parser {
    let bytes: [UInt8]
    let file: String
    var position = 0
    var line = 1
    /// Arrays and inline tables open around the value being parsed, and the parts of
    /// a dotted key: each level is a recursion. Without a bound, ten thousand '[' or
    /// a header of ten thousand dotted parts overflowed the stack (found by `make fuzz`);
    /// no configuration nests beyond a few levels.
    var depth = 0
    static let maximumDepth = 64

    init(text: String, file: String) {
        bytes = Array(text.utf8)
        self.file = file
    }

    // MARK: Document structure

    mutating func parseDocument() throws(TOMLError) -> TOMLTable {
        var root = TOMLTable()
        var current: [String] = []
        while true {
            skipWhitespaceAndComments(newlines: true)
            guard let byte = peek() else { return root }
            if byte == UInt8(ascii: "[") {
                current = try parseHeader(into: &root)
            } else {
                let keyLine = line
                let key = try parseKey()
                skipWhitespace()
                try expect(UInt8(ascii: "="), "expected '=' after the key")
                skipWhitespace()
                let value = try parseValue()
                try insert(value, at: current + key, line: keyLine, into: &root)
                try expectEndOfLine()
            }
        }
    }

    mutating func parseHeader(into root: inout TOMLTable) throws(TOMLError) -> [String] {
        let headerLine = line
        position += 1
        let isArray = peek() == UInt8(ascii: "[")
        if isArray { position += 1 }
        skipWhitespace()
        let path = try parseKey()
        skipWhitespace()
        try expect(UInt8(ascii: "]"), "expected ']' to close the table header")
        if isArray { try expect(UInt8(ascii: "]"), "expected ']]' to close the array of tables header") }
        try expectEndOfLine()
        try openTable(path, isArray: isArray, line: headerLine, in: &root)
        return path
    }

    /// Creates the table a header names (or appends to an array of tables).
    func openTable(_ path: [String], isArray: Bool, line: Int, in table: inout TOMLTable) throws(TOMLError) {
        let key = path[0]
        if path.count == 1 {
            if isArray {
                var elements: [TOMLValue] = []
                if let existing = table[key] {
                    guard case let .array(array) = existing.kind, array.allSatisfy({ $0.isTable }) else {
                        throw error("'\(key)' is already defined as \(existing.typeName) on line \(existing.line)", line: line)
                    }
                    elements = array
                }
                var element = TOMLTable(line: line)
                element.isExplicit = true
                elements.append(TOMLValue(.table(element), line: line))
                table.set(key, TOMLValue(.array(elements), line: line))
            } else if let existing = table[key] {
                guard case var .table(sub) = existing.kind, !sub.isInline else {
                    throw error("'\(key)' is already defined as \(existing.typeName) on line \(existing.line)", line: line)
                }
                guard !sub.isExplicit else { throw error("table [\(key)] is defined twice (first on line \(sub.line))", line: line) }
                sub.isExplicit = true
                sub.line = line
                table.set(key, TOMLValue(.table(sub), line: line))
            } else {
                var sub = TOMLTable(line: line)
                sub.isExplicit = true
                table.set(key, TOMLValue(.table(sub), line: line))
            }
            return
        }
        let rest = Array(path.dropFirst())
        switch table[key]?.kind {
        case nil:
            var sub = TOMLTable(line: line)
            try openTable(rest, isArray: isArray, line: line, in: &sub)
            table.set(key, TOMLValue(.table(sub), line: line))
        case var .table(sub) where !sub.isInline:
            try openTable(rest, isArray: isArray, line: line, in: &sub)
            table.set(key, TOMLValue(.table(sub), line: table[key]!.line))
        case var .array(elements) where elements.last?.isTable == true:
            guard case var .table(last) = elements[elements.count - 1].kind else { fatalError("checked above") }
            try openTable(rest, isArray: isArray, line: line, in: &last)
            elements[elements.count - 1].kind = .table(last)
            table.set(key, TOMLValue(.array(elements), line: table[key]!.line))
        default:
            throw error("'\(key)' is already defined as \(table[key]!.typeName) on line \(table[key]!.line)", line: line)
        }
    }

    /// Stores `value` under a dotted path below `table`, creating implicit tables.
    func insert(_ value: TOMLValue, at path: [String], line: Int, into table: inout TOMLTable) throws(TOMLError) {
        let key = path[0]
        if path.count == 1 {
            if let existing = table[key] {
                throw error("duplicate key '\(key)' (first defined on line \(existing.line))", line: line)
            }
            table.set(key, value)
            return
        }
        let rest = Array(path.dropFirst())
        switch table[key]?.kind {
        case nil:
            var sub = TOMLTable(line: line)
            try insert(value, at: rest, line: line, into: &sub)
            table.set(key, TOMLValue(.table(sub), line: line))
        case var .table(sub) where !sub.isInline:
            try insert(value, at: rest, line: line, into: &sub)
            table.set(key, TOMLValue(.table(sub), line: table[key]!.line))
        case var .array(elements) where elements.last?.isTable == true:
            guard case var .table(last) = elements[elements.count - 1].kind else { fatalError("checked above") }
            try insert(value, at: rest, line: line, into: &last)
            elements[elements.count - 1].kind = .table(last)
            table.set(key, TOMLValue(.array(elements), line: table[key]!.line))
        default:
            throw error("'\(key)' is already defined as \(table[key]!.typeName) on line \(table[key]!.line)", line: line)
        }
    }

    // MARK: Keys

    mutating func parseKey() throws(TOMLError) -> [String] {
        var parts: [String] = []
        while true {
            skipWhitespace()
            guard let byte = peek() else { throw error("expected a key") }
            if byte == UInt8(ascii: "\"") {
                parts.append(try parseBasicString())
            } else if byte == UInt8(ascii: "'") {
                parts.append(try parseLiteralString())
            } else {
                let start = position
                while let next = peek(), next.isBareKeyCharacter { position += 1 }
                guard position > start else { throw error("expected a key, found '\(Character(Unicode.Scalar(byte)))'") }
                parts.append(String(decoding: bytes[start..<position], as: UTF8.self))
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ".") else { return parts }
            guard parts.count < Self.maximumDepth else { throw error("a dotted key has more than \(Self.maximumDepth) parts") }
            position += 1
        }
    }

    // MARK: Values

    mutating func parseValue() throws(TOMLError) -> TOMLValue {
        let valueLine = line
        guard let byte = peek() else { throw error("expected a value") }
        switch byte {
        case UInt8(ascii: "\""):
            if starts(with: "\"\"\"") { return TOMLValue(.string(try parseMultilineString(literal: false)), line: valueLine) }
            return TOMLValue(.string(try parseBasicString()), line: valueLine)
        case UInt8(ascii: "'"):
            if starts(with: "'''") { return TOMLValue(.string(try parseMultilineString(literal: true)), line: valueLine) }
            return TOMLValue(.string(try parseLiteralString()), line: valueLine)
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            guard depth < Self.maximumDepth else { throw error("arrays and inline tables nest deeper than \(Self.maximumDepth) levels") }
            depth += 1
            defer { depth -= 1 }
            if byte == UInt8(ascii: "[") { return TOMLValue(.array(try parseArray()), line: valueLine) }
            return TOMLValue(.table(try parseInlineTable()), line: valueLine)
        default:
            return TOMLValue(try parseScalar(), line: valueLine)
        }
    }

    mutating func parseArray() throws(TOMLError) -> [TOMLValue] {
        let opened = line
        position += 1
        var elements: [TOMLValue] = []
        while true {
            skipWhitespaceAndComments(newlines: true)
            guard let byte = peek() else { throw error("unterminated array", line: opened) }
            if byte == UInt8(ascii: "]") { position += 1; return elements }
            elements.append(try parseValue())
            skipWhitespaceAndComments(newlines: true)
            if peek() == UInt8(ascii: ",") { position += 1; continue }
            if peek() == nil { throw error("unterminated array", line: opened) }
            try expect(UInt8(ascii: "]"), "expected ',' or ']' in the array")
            return elements
        }
    }

    mutating func parseInlineTable() throws(TOMLError) -> TOMLTable {
        var table = TOMLTable(line: line)
        position += 1
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { position += 1; table.isInline = true; return table }
        while true {
            skipWhitespace()
            let keyLine = line
            let key = try parseKey()
            skipWhitespace()
            try expect(UInt8(ascii: "="), "expected '=' after the key")
            skipWhitespace()
            try insert(try parseValue(), at: key, line: keyLine, into: &table)
            skipWhitespace()
            if peek() == UInt8(ascii: ",") { position += 1; continue }
            try expect(UInt8(ascii: "}"), "expected ',' or '}' in the inline table")
            table.isInline = true
            return table
        }
    }

    mutating func parseScalar() throws(TOMLError) -> TOMLValue.Kind {
        let start = position
        while let byte = peek(), !byte.endsScalar { position += 1 }
        // A date-time may have one space between date and time.
        if position - start == 10, peek() == UInt8(ascii: " "), position + 1 < bytes.count, bytes[position + 1].isDigit {
            position += 1
            while let byte = peek(), !byte.endsScalar { position += 1 }
        }
        let token = String(decoding: bytes[start..<position], as: UTF8.self)
        guard !token.isEmpty else { throw error("expected a value") }
        switch token {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan", "-nan": return .float(.nan)
        default: break
        }
        if let date = Self.date(token) { return date }
        if token.contains(":"), token.first?.isNumber == true { return .dateTime(token) }
        let digits = token.filter { $0 != "_" }
        guard !token.hasPrefix("_"), !token.hasSuffix("_"), !token.contains("__") else {
            throw error("invalid number '\(token)'")
        }
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where digits.hasPrefix(prefix) {
            guard let value = Int(digits.dropFirst(2), radix: radix) else { throw error("invalid number '\(token)'") }
            return .integer(value)
        }
        let unsigned = digits.hasPrefix("+") || digits.hasPrefix("-") ? String(digits.dropFirst()) : digits
        if unsigned.count > 1, unsigned.hasPrefix("0"), unsigned.dropFirst().first?.isNumber == true {
            throw error("invalid number '\(token)': leading zeros are not allowed")
        }
        if let value = Int(digits) { return .integer(value) }
        if digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let value = Double(digits) {
            return .float(value)
        }
        if token.first?.isLetter == true {
            throw error("invalid value '\(token)' (strings need quotes)")
        }
        throw error("invalid value '\(token)'")
    }

    static func date(_ token: String) -> TOMLValue.Kind? {
        let parts = token.split(separator: "-", omittingEmptySubsequences: false)
        guard token.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        return .date(year: year, month: month, day: day)
    }

    // MARK: Strings

    mutating func parseBasicString() throws(TOMLError) -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var pending: [UInt8] = []
        func flush() { scalars.append(contentsOf: String(decoding: pending, as: UTF8.self).unicodeScalars); pending.removeAll() }
        while true {
            guard let byte = peek() else { throw error("unterminated string") }
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\n"):
                throw error("unterminated string (newline before the closing quote)")
            case UInt8(ascii: "\\"):
                flush()
                scalars.append(try parseEscape())
            default:
                pending.append(byte)
            }
        }
    }

    mutating func parseEscape() throws(TOMLError) -> Unicode.Scalar {
        guard let byte = peek() else { throw error("unterminated escape") }
        position += 1
        switch byte {
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "e"): return "\u{1B}"
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            let count = byte == UInt8(ascii: "u") ? 4 : 8
            guard position + count <= bytes.count,
                let value = UInt32(String(decoding: bytes[position..<position + count], as: UTF8.self), radix: 16),
                let scalar = Unicode.Scalar(value)
            else { throw error("invalid unicode escape") }
            position += count
            return scalar
        default:
            throw error("invalid escape '\\\(Character(Unicode.Scalar(byte)))'")
        }
    }

    mutating func parseLiteralString() throws(TOMLError) -> String {
        position += 1
        let start = position
        while let byte = peek(), byte != UInt8(ascii: "'") {
            if byte == UInt8(ascii: "\n") { throw error("unterminated string (newline before the closing quote)") }
            position += 1
        }
        guard peek() != nil else { throw error("unterminated string") }
        defer { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    mutating func parseMultilineString(literal: Bool) throws(TOMLError) -> String {
        let quote = literal ? UInt8(ascii: "'") : UInt8(ascii: "\"")
        position += 3
        if peek() == UInt8(ascii: "\n") { position += 1; line += 1 }
        var result = String.UnicodeScalarView()
        var pending: [UInt8] = []
        func flush() { result.append(contentsOf: String(decoding: pending, as: UTF8.self).unicodeScalars); pending.removeAll() }
        while true {
            guard let byte = peek() else { throw error("unterminated multi-line string") }
            if byte == quote, starts(with: literal ? "'''" : "\"\"\"") {
                // A run of 3 to 5 quotes closes the string; up to two belong to the content.
                var run = 0
                while position + run < bytes.count, bytes[position + run] == quote, run < 5 { run += 1 }
                pending.append(contentsOf: repeatElement(quote, count: run - 3))
                position += run
                flush()
                return String(result)
            }
            position += 1
            if byte == UInt8(ascii: "\n") { line += 1 }
            if !literal && byte == UInt8(ascii: "\\") {
                if let next = peek(),
                    next == UInt8(ascii: "\n") || next == UInt8(ascii: " ") || next == UInt8(ascii: "\t") || next == UInt8(ascii: "\r")
                {
                    // Line-ending backslash: trim the newline and the following white space.
                    while let skip = peek(),
                        skip == UInt8(ascii: " ") || skip == UInt8(ascii: "\t") || skip == UInt8(ascii: "\n") || skip == UInt8(ascii: "\r")
                    {
                        if skip == UInt8(ascii: "\n") { line += 1 }
                        position += 1
                    }
                    continue
                }
                flush()
                result.append(try parseEscape())
                continue
            }
            pending.append(byte)
        }
    }

    // MARK: Scanning

    func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    func starts(with text: String) -> Bool {
        let pattern = Array(text.utf8)
        return bytes.count >= position + pattern.count && Array(bytes[position..<position + pattern.count]) == pattern
    }

    mutating func skipWhitespace() {
        while let byte = peek(), byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { position += 1 }
    }

    mutating func skipWhitespaceAndComments(newlines: Bool) {
        while let byte = peek() {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                position += 1
            } else if byte == UInt8(ascii: "\n") && newlines {
                position += 1
                line += 1
            } else if byte == UInt8(ascii: "#") {
                while let next = peek(), next != UInt8(ascii: "\n") { position += 1 }
            } else {
                return
            }
        }
    }

    mutating func expectEndOfLine() throws(TOMLError) {
        skipWhitespaceAndComments(newlines: false)
        guard let byte = peek() else { return }
        guard byte == UInt8(ascii: "\n") else {
            throw error("unexpected '\(Character(Unicode.Scalar(byte)))' after the value (one key = value per line)")
        }
    }

    mutating func expect(_ byte: UInt8, _ message: String) throws(TOMLError) {
        guard peek() == byte else { throw error(message) }
        position += 1
    }

    func error(_ message: String, line: Int? = nil) -> TOMLError {
        TOMLError(file: file, line: line ?? self.line, message: message)
    }
}

extension TOMLValue {
    var isTable: Bool { if case .table = kind { return true } else { return false } }
}

private extension UInt8 {
    var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    var isBareKeyCharacter: Bool {
        isDigit || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z")) || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z"))
            || self == UInt8(ascii: "-") || self == UInt8(ascii: "_")
    }
    var endsScalar: Bool {
        self == UInt8(ascii: " ") || self == UInt8(ascii: "\t") || self == UInt8(ascii: "\n") || self == UInt8(ascii: "\r")
            || self == UInt8(ascii: ",") || self == UInt8(ascii: "]") || self == UInt8(ascii: "}") || self == UInt8(ascii: "#")
    }
}
