import ServerTrust
import Testing

@Suite("Host patterns")
struct HostTableTests {
    @Test(
        "exact, one label, any depth and the apex; case and trailing dot ignored",
        arguments: [
            ("api.example.com", "API.example.com.", true),
            ("api.example.com", "www.example.com", false),
            ("*.example.com", "a.example.com", true),
            ("*.example.com", "a.b.example.com", false),
            ("*.example.com", "example.com", false),
            ("**.example.com", "example.com", true),
            ("**.example.com", "a.b.example.com", true),
            ("**.example.com", "badexample.com", false),
            ("192.0.2.7", "192.0.2.7", true)
        ])
    func matching(pattern: String, host: String, expected: Bool) throws {
        #expect(try HostPattern(pattern).matches(host) == expected)
    }

    @Test("the longest match wins; unconfigured hosts match nothing")
    func precedence() throws {
        var table = HostTable<String>()
        try table.add(HostPattern("**.example.com"), "any depth")
        try table.add(HostPattern("*.example.com"), "one label")
        try table.add(HostPattern("api.example.com"), "exact")
        try table.add(HostPattern("**.eu.example.com"), "eu")
        #expect(table.lookup("api.example.com")?.value == "exact")
        #expect(table.lookup("www.example.com")?.value == "one label")
        #expect(table.lookup("example.com")?.value == "any depth")
        #expect(table.lookup("a.b.example.com")?.value == "any depth")
        #expect(table.lookup("a.eu.example.com")?.value == "eu")
        #expect(table.lookup("example.org") == nil)
        #expect(throws: HostPatternError.self) { try table.add(HostPattern("API.example.com."), "again") }
    }

    @Test(
        "wildcards over public suffixes and malformed names are rejected",
        arguments: [
            "**.com", "*.co.uk", "**.github.io", "*.", "exa mple.com", "a..b", "-a.example.com", "*.*.example.com"
        ])
    func rejected(pattern: String) {
        #expect(throws: HostPatternError.self) { try HostPattern(pattern) }
    }
}
