import FoundationEssentials

/// The Public Suffix List (publicsuffix.org), as Debian's `publicsuffix` package
/// ships it: which names are registries (`com`, `co.uk`, `github.io`) that no
/// wildcard certificate or host pattern may cover.
public struct PublicSuffixList: Sendable {
    private let rules: Set<String>
    private let wildcards: Set<String>
    private let exceptions: Set<String>

    /// Where Debian's `publicsuffix` package installs the list.
    public static let debianPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// The system's list; without one, only single-label names count as public suffixes.
    public static let system: PublicSuffixList = (try? PublicSuffixList(contentsOf: debianPath)) ?? PublicSuffixList(text: "")

    /// Reads a list in the publicsuffix.org format.
    /// - Throws: when the file cannot be read as UTF-8.
    public init(contentsOf path: String) throws {
        self.init(text: try String(contentsOfFile: path, encoding: .utf8))
    }

    /// Parses a list in the publicsuffix.org format (comments, `*.` wildcards, `!` exceptions).
    public init(text: String) {
        var rules: Set<String> = []
        var wildcards: Set<String> = []
        var exceptions: Set<String> = []
        for line in text.split(whereSeparator: \.isNewline) {
            let rule = line.split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
            guard !rule.isEmpty, !rule.hasPrefix("//") else { continue }
            if rule.hasPrefix("!") {
                exceptions.insert(String(rule.dropFirst()).lowercased())
            } else if rule.hasPrefix("*.") {
                wildcards.insert(String(rule.dropFirst(2)).lowercased())
            } else {
                rules.insert(rule.lowercased())
            }
        }
        self.rules = rules
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// Whether `name` itself is a public suffix (`co.uk` is; `example.co.uk` is not).
    /// Names are compared in ASCII (A-labels), case-insensitively.
    public func isPublicSuffix(_ domain: String) -> Bool {
        var trimmed = Substring(domain.lowercased())
        while trimmed.hasPrefix(".") { trimmed = trimmed.dropFirst() }
        while trimmed.hasSuffix(".") { trimmed = trimmed.dropLast() }
        let name = String(trimmed)
        guard !name.isEmpty else { return true }
        guard name.contains(".") else { return true } // every TLD is a suffix ("*" default rule)
        if exceptions.contains(name) { return false }
        if rules.contains(name) { return true }
        let parent = name.split(separator: ".", maxSplits: 1).last.map(String.init) ?? ""
        return wildcards.contains(parent)
    }
}
