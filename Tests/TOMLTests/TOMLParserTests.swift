import TOML
import Testing

@Suite("TOML reader")
struct TOMLParserTests {
    @Test("values and their lines")
    func values() throws {
        let table = try TOML.parse(
            """
            # comment
            name = "reachd" # trailing
            count = 1_000
            hex = 0xff
            ratio = 0.5
            on = true
            day = 2027-06-30
            when = 2027-06-30T10:00:00Z
            list = [
              "a", 'b',  # comments in arrays
            ]
            inline = { a = 1, b.c = "x" }
            "quoted key" = 'C:\\path'
            text = "tab\\tquote\\" \\u00e9"
            multi = \"\"\"
            one
            two\"\"\"
            """, file: "t.toml")
        #expect(table["name"] == TOMLValue(.string("reachd"), line: 2))
        #expect(table["count"]?.kind == .integer(1000))
        #expect(table["hex"]?.kind == .integer(255))
        #expect(table["ratio"]?.kind == .float(0.5))
        #expect(table["on"]?.kind == .boolean(true))
        #expect(table["day"]?.kind == .date(year: 2027, month: 6, day: 30))
        #expect(table["when"]?.kind == .dateTime("2027-06-30T10:00:00Z"))
        #expect(table["list"]?.kind == .array([TOMLValue(.string("a"), line: 10), TOMLValue(.string("b"), line: 10)]))
        guard case let .table(inline) = table["inline"]?.kind, case let .table(b) = inline["b"]?.kind else {
            Issue.record("inline table")
            return
        }
        #expect(b["c"]?.kind == .string("x"))
        #expect(table["quoted key"]?.kind == .string("C:\\path"))
        #expect(table["text"]?.kind == .string("tab\tquote\" é"))
        #expect(table["multi"]?.kind == .string("one\ntwo"))
        #expect(table.keys.first == "name")
    }

    @Test("tables and arrays of tables")
    func tables() throws {
        let table = try TOML.parse(
            """
            [trust]
            timeout = "5s"

            [[trust.host]]
            match = "a.example"

            [[trust.host]]
            match = "b.example"
            port = 8443
            """)
        guard case let .table(trust) = table["trust"]?.kind, case let .array(hosts) = trust["host"]?.kind else {
            Issue.record("structure")
            return
        }
        #expect(hosts.count == 2)
        #expect(hosts[1].line == 7)
        guard case let .table(second) = hosts[1].kind else { return }
        #expect(second["port"]?.kind == .integer(8443))
    }

    @Test(
        "errors name the line",
        arguments: [
            ("a = 1\na = 2", 2, "duplicate key 'a' (first defined on line 1)"),
            ("[t]\n[t]", 2, "table [t] is defined twice (first on line 1)"),
            ("a = \"open", 1, "unterminated string"),
            ("a = b", 1, "invalid value 'b' (strings need quotes)"),
            ("\n\na = 1 2", 3, "unexpected '2' after the value (one key = value per line)"),
            ("a = 012", 1, "invalid number '012': leading zeros are not allowed"),
            ("a = [1, 2", 1, "unterminated array"),
            ("= 1", 1, "expected a key, found '='"),
            ("a = \"\\q\"", 1, "invalid escape '\\q'")
        ])
    func errors(text: String, line: Int, message: String) {
        #expect(throws: TOMLError(file: "x.toml", line: line, message: message)) {
            try TOML.parse(text, file: "x.toml")
        }
    }

    @Test("the schema reader rejects unknown keys and wrong types")
    func reader() throws {
        let table = try TOML.parse("a = 1\nb = \"x\"\nc = true\n", file: "f")
        var reader = TOMLTableReader(table, file: "f", name: "[s]")
        #expect(try reader.integer("a", in: 0...5) == 1)
        #expect(throws: TOMLError(file: "f", line: 2, message: "b must be true or false, not a string")) {
            try reader.bool("b")
        }
        #expect(throws: TOMLError(file: "f", line: 3, message: "unknown key 'c' in [s]")) { try reader.finish() }
    }

    @Test("at the top level, an unknown table or key is named as such, with its line")
    func unknownTablesAndTopLevelKeys() throws {
        func finish(_ text: String) -> TOMLError? {
            var reader = TOMLTableReader((try? TOML.parse(text, file: "r.toml")) ?? TOMLTable(), file: "r.toml", name: "")
            _ = reader.value("monitor")
            do { try reader.finish() } catch { return error }
            return nil
        }
        #expect(finish("[monitor]\nignore = []\n") == nil)
        #expect(
            finish("[monitor]\n\n[conectivity]\nuri = \"http://x/\"\n")
                == TOMLError(file: "r.toml", line: 3, message: "unknown table [conectivity]"))
        #expect(
            finish("foo = 1\n[monitor]\n")
                == TOMLError(file: "r.toml", line: 1, message: "unknown key 'foo' (every key belongs in a table)"))
        #expect(finish("[[hosts]]\nmatch = \"a\"\n") == TOMLError(file: "r.toml", line: 1, message: "unknown table [[hosts]]"))
        #expect(finish("[compat.x]\ny = 1\n") == TOMLError(file: "r.toml", line: 1, message: "unknown table [compat]"))
    }

    /// `make fuzz` (toml, 2026-11-24): ten thousand '[', and a table header of ten thousand dotted parts, overflowed the stack.
    @Test("nesting is bounded: 64 levels and 64 key parts parse, more are an error, not a stack overflow")
    func nestingBounded() throws {
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try TOML.parse("a = \(deepest)\n", file: "n.toml")["a"] != nil)
        #expect(
            try TOML.parse("a = " + String(repeating: "{ b = ", count: 63) + "1" + String(repeating: " }", count: 63), file: "n.toml")["a"]
                != nil)
        let parts = (0..<64).map { "k\($0)" }.joined(separator: ".")
        #expect(try TOML.parse("[\(parts)]\n\(parts) = 1\n", file: "n.toml")["k0"] != nil)
        for key in ["[" + String(repeating: "a.", count: 10_000) + "a]", String(repeating: "a.", count: 10_000) + "a = 1"] {
            #expect(throws: TOMLError(file: "n.toml", line: 1, message: "a dotted key has more than 64 parts")) {
                try TOML.parse(key, file: "n.toml")
            }
        }
        for opener in ["[", "{ b = "] {
            #expect(throws: TOMLError(file: "n.toml", line: 1, message: "arrays and inline tables nest deeper than 64 levels")) {
                try TOML.parse("metered = " + String(repeating: opener, count: 10_000), file: "n.toml")
            }
        }
    }

    @Test("durations: ms, s, m, h, d; anything else names the key and the line")
    func durations() throws {
        let table = try TOML.parse("a = \"250ms\"\nb = \"6h\"\nc = \"5 s\"\n", file: "d.toml")
        var reader = TOMLTableReader(table, file: "d.toml", name: "[x]")
        #expect(try reader.duration("a")?.value == .milliseconds(250))
        #expect(try reader.duration("b")?.value == .seconds(6 * 3600))
        #expect(
            throws: TOMLError(
                file: "d.toml", line: 3, message: "c must be a duration such as \"250ms\", \"5s\", \"10m\", \"6h\" or \"1d\", not \"5 s\"")
        ) {
            try reader.duration("c")
        }
        // The fuzzer's find: a count whose product overflowed Duration's arithmetic and trapped.
        let huge = try TOML.parse("interval = \"000000667921401735632213h\"\nd = \"36500d\"\ne = \"36501d\"\n", file: "d.toml")
        var hugeReader = TOMLTableReader(huge, file: "d.toml", name: "[x]")
        #expect(throws: TOMLError.self) { try hugeReader.duration("interval") }
        #expect(try hugeReader.duration("d")?.value == .seconds(36500 * 86400))
        #expect(throws: TOMLError(file: "d.toml", line: 3, message: "e must be at most 100 years, not \"36501d\"")) {
            try hugeReader.duration("e")
        }
    }
}
