/// A TOML value and the line it was written on.
public struct TOMLValue: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case float(Double)
        case boolean(Bool)
        /// A local date (`2027-06-30`).
        case date(year: Int, month: Int, day: Int)
        /// A date-time or time, kept as written (RFC 3339).
        case dateTime(String)
        case array([TOMLValue])
        case table(TOMLTable)
    }

    public var kind: Kind
    /// 1-based line of the value in its file.
    public var line: Int

    public init(_ kind: Kind, line: Int) {
        self.kind = kind
        self.line = line
    }

    /// How the value's type is named in error messages.
    public var typeName: String {
        switch kind {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a float"
        case .boolean: "a boolean"
        case .date: "a date"
        case .dateTime: "a date-time"
        case .array: "an array"
        case .table: "a table"
        }
    }
}

/// A TOML table: keys in the order they were written.
public struct TOMLTable: Sendable, Equatable {
    public private(set) var keys: [String] = []
    public private(set) var values: [String: TOMLValue] = [:]
    /// Line of the `[header]` (or of the key that created the table); 0 for the root.
    public var line: Int
    /// Set for tables created by a `[header]` or a `[[header]]`, which cannot be opened twice.
    var isExplicit = false
    /// Set for inline tables, which are closed once written.
    var isInline = false

    public init(line: Int = 0) { self.line = line }

    public subscript(key: String) -> TOMLValue? { values[key] }

    mutating func set(_ key: String, _ value: TOMLValue) {
        if values.updateValue(value, forKey: key) == nil { keys.append(key) }
    }
}

/// A configuration error, with where it is.
public struct TOMLError: Error, Equatable, CustomStringConvertible, Sendable {
    public var file: String
    public var line: Int
    public var message: String

    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `file:line: message`, the form compilers and editors understand.
    public var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
}
