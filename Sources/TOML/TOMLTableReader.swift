/// Reads a table against a schema: typed getters that name the line of a bad
/// value, and `finish()` that rejects every key nobody asked for.
public struct TOMLTableReader {
    public let table: TOMLTable
    public let file: String
    /// How the table is named in messages: "[monitor]", "[[trust.host]]".
    public let name: String
    private var consumed: Set<String> = []

    public init(_ table: TOMLTable, file: String, name: String) {
        self.table = table
        self.file = file
        self.name = name
    }

    public func error(_ message: String, line: Int) -> TOMLError {
        TOMLError(file: file, line: line, message: message)
    }

    /// The raw value, marked as known.
    public mutating func value(_ key: String) -> TOMLValue? {
        consumed.insert(key)
        return table[key]
    }

    public mutating func string(_ key: String) throws(TOMLError) -> (value: String, line: Int)? {
        guard let value = value(key) else { return nil }
        guard case let .string(text) = value.kind else { throw mismatch(key, value, expected: "a string") }
        return (text, value.line)
    }

    public mutating func bool(_ key: String) throws(TOMLError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case let .boolean(flag) = value.kind else { throw mismatch(key, value, expected: "true or false") }
        return flag
    }

    public mutating func integer(_ key: String, in range: ClosedRange<Int>) throws(TOMLError) -> Int? {
        guard let value = value(key) else { return nil }
        guard case let .integer(number) = value.kind else { throw mismatch(key, value, expected: "an integer") }
        guard range.contains(number) else {
            throw error("\(key) must be between \(range.lowerBound) and \(range.upperBound), not \(number)", line: value.line)
        }
        return number
    }

    /// A duration written as a string: "250ms", "5s", "10m", "6h", "1d", at most 100 years.
    public mutating func duration(_ key: String) throws(TOMLError) -> (value: Duration, text: String, line: Int)? {
        guard let (text, line) = try string(key) else { return nil }
        let units: [(suffix: String, milliseconds: Int)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        // Far past any interval or timeout, and far below where Duration's arithmetic traps (found by fuzzing).
        let longest = 100 * 365 * 86_400_000
        for unit in units where text.hasSuffix(unit.suffix) {
            guard let count = Int(text.dropLast(unit.suffix.count)), count >= 0 else { continue }
            guard count <= longest / unit.milliseconds else {
                throw error("\(key) must be at most 100 years, not \"\(text)\"", line: line)
            }
            return (.milliseconds(count * unit.milliseconds), text, line)
        }
        throw error("\(key) must be a duration such as \"250ms\", \"5s\", \"10m\", \"6h\" or \"1d\", not \"\(text)\"", line: line)
    }

    /// An array of strings; a single string is not accepted in its place.
    public mutating func strings(_ key: String) throws(TOMLError) -> [(value: String, line: Int)]? {
        guard let value = value(key) else { return nil }
        guard case let .array(elements) = value.kind else { throw mismatch(key, value, expected: "an array of strings") }
        var result: [(String, Int)] = []
        for element in elements {
            guard case let .string(text) = element.kind else {
                throw error("\(key) must hold strings, found \(element.typeName)", line: element.line)
            }
            result.append((text, element.line))
        }
        return result
    }

    /// A sub-table, as a reader of its own.
    public mutating func table(_ key: String) throws(TOMLError) -> TOMLTableReader? {
        guard let value = value(key) else { return nil }
        guard case let .table(sub) = value.kind else { throw mismatch(key, value, expected: "a table") }
        let subName = name.hasPrefix("[") ? "[\(name.trimmingBrackets).\(key)]" : "[\(key)]"
        return TOMLTableReader(sub, file: file, name: subName)
    }

    /// Every key that no getter asked for is an error: a typo must not be ignored.
    /// A misspelt table would otherwise switch nothing on, silently.
    public func finish() throws(TOMLError) {
        for key in table.keys where !consumed.contains(key) {
            let value = table[key]!
            switch value.kind {
            case .table where name.isEmpty:
                throw error("unknown table [\(key)]", line: value.line)
            case let .array(elements) where name.isEmpty && elements.allSatisfy(\.isTable) && !elements.isEmpty:
                throw error("unknown table [[\(key)]]", line: value.line)
            default:
                throw error(
                    name.isEmpty ? "unknown key '\(key)' (every key belongs in a table)" : "unknown key '\(key)' in \(name)",
                    line: value.line)
            }
        }
    }

    private func mismatch(_ key: String, _ value: TOMLValue, expected: String) -> TOMLError {
        error("\(key) must be \(expected), not \(value.typeName)", line: value.line)
    }
}

private extension String {
    var trimmingBrackets: Substring {
        var text = Substring(self)
        while text.first == "[" { text = text.dropFirst() }
        while text.last == "]" { text = text.dropLast() }
        return text
    }
}
