/// A host pattern of the `[[trust.host]]` table: `api.example.com` (exact),
/// `*.example.com` (exactly one more label), `**.example.com` (any depth, and the
/// apex). Case-insensitive; a trailing dot is ignored.
public struct HostPattern: Hashable, Sendable, CustomStringConvertible {
    /// How a pattern matches; a more specific kind wins over a less specific one of the same domain.
    public enum Kind: Int, Sendable, Comparable {
        /// `**.domain`: the domain and any name under it.
        case anyDepth
        /// `*.domain`: exactly one label more than the domain.
        case oneLabel
        /// `domain`: that name only.
        case exact
        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// How the pattern matches.
    public let kind: Kind
    /// Lower case, no trailing dot; for wildcards, the part after `*.` / `**.`.
    public let domain: String

    /// - Throws: `HostPatternError` for names that are not host names, and for
    ///   wildcards over a public suffix (`**.com`, `*.co.uk`), which would pin half the Internet.
    public init(_ text: String, publicSuffixes: PublicSuffixList = .system) throws(HostPatternError) {
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name.hasPrefix("**.") {
            kind = .anyDepth
            name.removeFirst(3)
        } else if name.hasPrefix("*.") {
            kind = .oneLabel
            name.removeFirst(2)
        } else {
            kind = .exact
        }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let validLabel: (Substring) -> Bool = { label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
        let isAddress = kind == .exact && (name.contains(":") || labels.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) })
        guard isAddress || (!labels.isEmpty && labels.allSatisfy(validLabel)) else {
            throw HostPatternError(pattern: text, reason: "is not a host name, \"*.\" or \"**.\" followed by one")
        }
        if kind != .exact && publicSuffixes.isPublicSuffix(name) {
            throw HostPatternError(pattern: text, reason: "covers the public suffix \(name)")
        }
        domain = name
    }

    /// The exact pattern of a host no entry matches, whatever its spelling.
    init(unconfigured host: String) {
        kind = .exact
        domain = host.lowercased()
    }

    public var description: String {
        switch kind {
        case .exact: domain
        case .oneLabel: "*.\(domain)"
        case .anyDepth: "**.\(domain)"
        }
    }

    /// Whether `host` (any case, trailing dot or not) matches the pattern.
    public func matches(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        switch kind {
        case .exact:
            return name == domain
        case .oneLabel:
            guard name.hasSuffix("." + domain) else { return false }
            let label = name.dropLast(domain.count + 1)
            return !label.isEmpty && !label.contains(".")
        case .anyDepth:
            return name == domain || name.hasSuffix("." + domain)
        }
    }
}

/// A host pattern that cannot be used, and why.
public struct HostPatternError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The pattern as written.
    public let pattern: String
    /// What is wrong with it.
    public let reason: String
    public var description: String { "host pattern \"\(pattern)\" \(reason)" }
}

/// Per-host settings by pattern. The longest match wins: the pattern with the
/// longest domain, and for the same domain exact before `*.` before `**.`.
/// Hosts that match nothing get the default evaluation.
public struct HostTable<Value: Sendable>: Sendable {
    /// The patterns and their values, in the order added.
    public private(set) var entries: [(pattern: HostPattern, value: Value)] = []

    /// An empty table: every host gets the default.
    public init() {}

    /// - Throws: `HostPatternError` when the same pattern is configured twice.
    public mutating func add(_ pattern: HostPattern, _ value: Value) throws(HostPatternError) {
        guard !entries.contains(where: { $0.pattern == pattern }) else {
            throw HostPatternError(pattern: pattern.description, reason: "is configured twice")
        }
        entries.append((pattern, value))
    }

    /// The entry whose pattern matches `host` most specifically; nil when none does.
    public func lookup(_ host: String) -> (pattern: HostPattern, value: Value)? {
        entries.filter { $0.pattern.matches(host) }.max { lhs, rhs in
            (lhs.pattern.domain.count, lhs.pattern.kind) < (rhs.pattern.domain.count, rhs.pattern.kind)
        }
    }
}
