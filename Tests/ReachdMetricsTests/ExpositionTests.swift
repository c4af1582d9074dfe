import Foundation
import HTTPWire
import ServerTrust
import TOML
import TestTraits
import Testing
import TrustHelperMessages

@testable import ReachdMetrics

@Suite("Prometheus exposition", .ownThreads)
struct ExpositionTests {
    let families = [
        MetricFamily.gauge("reachd_path_up", help: "1 when usable.", 1),
        MetricFamily.counter("reachd_path_changes_total", help: "Published.", 42),
        MetricFamily(
            "reachd_trust_verdict", .gauge, help: "Verdicts.",
            samples: MetricFamily.stateSet(
                label: "verdict", states: ["trusted", "expired"], current: "expired",
                labels: [.init("host", "a\"b\\c\nd")])),
        MetricFamily(
            "reachd_trust_cert_expiry_timestamp_seconds", .gauge, help: "Expiry.",
            samples: [.init([.init("host", "api.test")], 1_798_761_600)]),
        MetricFamily("reachd_empty", .gauge, help: "No samples.", samples: [])
    ]

    @Test("text format 0.0.4: HELP and TYPE per family, escaped label values, integers without a fraction")
    func prometheusText() {
        #expect(
            String(decoding: families.exposition(.prometheus), as: UTF8.self) == """
                # HELP reachd_path_up 1 when usable.
                # TYPE reachd_path_up gauge
                reachd_path_up 1
                # HELP reachd_path_changes_total Published.
                # TYPE reachd_path_changes_total counter
                reachd_path_changes_total 42
                # HELP reachd_trust_verdict Verdicts.
                # TYPE reachd_trust_verdict gauge
                reachd_trust_verdict{host="a\\"b\\\\c\\nd",verdict="trusted"} 0
                reachd_trust_verdict{host="a\\"b\\\\c\\nd",verdict="expired"} 1
                # HELP reachd_trust_cert_expiry_timestamp_seconds Expiry.
                # TYPE reachd_trust_cert_expiry_timestamp_seconds gauge
                reachd_trust_cert_expiry_timestamp_seconds{host="api.test"} 1798761600

                """)
    }

    @Test("OpenMetrics 1.0: counter families without _total, UNIT for seconds, # EOF")
    func openMetrics() {
        let text = String(decoding: families.exposition(.openMetrics), as: UTF8.self)
        #expect(text.contains("# TYPE reachd_path_changes counter\nreachd_path_changes_total 42\n"))
        #expect(text.contains("# UNIT reachd_trust_cert_expiry_timestamp_seconds seconds\n"))
        #expect(text.hasSuffix("# EOF\n"))
        #expect(!text.contains("reachd_empty"))
    }

    @Test("the text format passes promtool check metrics")
    func promtool() throws {
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        check.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        check.standardInput = input
        check.standardOutput = output
        check.standardError = output
        try check.run()
        input.fileHandleForWriting.write(Data(families.exposition(.prometheus)))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        check.waitUntilExit()
        #expect(check.terminationStatus == 0 && said.isEmpty, "\(said)")
    }

    @Test(
        "values",
        arguments: [
            (1.0, "1"), (0.0, "0"), (0.25, "0.25"), (-3.0, "-3"), (1_798_761_600, "1798761600"),
            (Double.infinity, "+Inf"), (Double.nan, "NaN"), (1e20, "1e+20")
        ])
    func values(value: Double, text: String) {
        var out: [UInt8] = []
        [MetricFamily].append(value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == text)
    }

    @Test("the format follows the Accept header")
    func negotiation() {
        #expect(MetricsFormat(accept: nil) == .prometheus)
        #expect(MetricsFormat(accept: "text/plain;version=0.0.4;q=0.5,*/*;q=0.1") == .prometheus)
        #expect(
            MetricsFormat(
                accept:
                    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
            ) == .openMetrics)
    }
}

@Suite("The metrics server's request parsing")
struct HTTPRequestTests {
    @Test("a scraper's request")
    func scrape() {
        let request = HTTPRequest(
            Array("GET /metrics HTTP/1.1\r\nHost: x\r\nACCEPT: application/openmetrics-text\r\nUser-Agent: Prometheus/2.42.0\r\n\r\n".utf8))
        #expect(request == .complete(method: "GET", target: "/metrics", accept: "application/openmetrics-text"))
    }

    @Test("incomplete, then malformed")
    func partial() {
        #expect(HTTPRequest(Array("GET /metrics HTTP/1.1\r\nHost: x\r\n".utf8)) == .incomplete)
        #expect(HTTPRequest(Array("hello\r\n\r\n".utf8)) == .malformed)
        #expect(HTTPRequest(Array("GET metrics HTTP/1.1\r\n\r\n".utf8)) == .malformed)
        #expect(HTTPRequest(Array("GET /metrics HTTP/1.1\r\nno colon\r\n\r\n".utf8)) == .malformed)
        #expect(HTTPRequest(Array("GET /metrics SPDY/3\r\n\r\n".utf8)) == .malformed)
    }
}

@Suite("[metrics] in reachd.toml")
struct MetricsOptionsTests {
    func read(_ text: String) throws -> MetricsOptions {
        let document = try TOML.parse(text, file: "reachd.toml")
        var root = TOMLTableReader(document, file: "reachd.toml", name: "")
        guard var table = try root.table("metrics") else { return MetricsOptions() }
        return try MetricsOptions(reading: &table)
    }

    @Test("listen and textfile")
    func valid() throws {
        let options = try read("[metrics]\nlisten = \"127.0.0.1:9748\"\ntextfile = \"/var/lib/prometheus/node-exporter/reachd.prom\"\n")
        #expect(options.listen?.description == "127.0.0.1:9748")
        #expect(options.textfile == "/var/lib/prometheus/node-exporter/reachd.prom")
        #expect(try read("[metrics]\nlisten = \"[::1]:9748\"").listen?.description == "[::1]:9748")
        #expect(try read("").listen == nil)
    }

    @Test(
        "bad values name their line",
        arguments: [
            ("listen = \"localhost:9748\"", "listen must be ADDRESS:PORT"),
            ("listen = \"127.0.0.1\"", "listen must be ADDRESS:PORT"),
            ("listen = \"127.0.0.1:0\"", "listen must be ADDRESS:PORT"),
            ("listen = \"127.0.0.1:70000\"", "listen must be ADDRESS:PORT"),
            ("listen = \"::1:9748\"", "listen must be ADDRESS:PORT"),
            ("textfile = \"reachd.prom\"", "absolute path ending in .prom"),
            ("textfile = \"/tmp/reachd.txt\"", "absolute path ending in .prom"),
            ("port = 9748", "port")
        ])
    func invalid(line: String, message: String) {
        #expect {
            _ = try read("[metrics]\n\(line)\n")
        } throws: { error in
            "\(error)".hasPrefix("reachd.toml:2: ") && "\(error)".contains(message)
        }
    }
}

@Suite("The node_exporter textfile")
struct MetricsTextfileTests {
    @Test("replaced atomically, readable by others, nothing left beside it; unchanged text is not rewritten")
    func atomic() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("textfile-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("reachd.prom").path
        // mkstemp makes the file 0600 whatever the umask, so 0644 proves the chmod. (The umask is not
        // set to the service's 0077 here: it is the process's, and a suite running meanwhile would
        // create its scratch directory unreadable to the other users its test runs as.)
        var logged: [String] = []
        let textfile = MetricsTextfile(path: path) { logged.append($0) }
        textfile.update(Array("a 1\n".utf8))
        let first = try FileManager.default.attributesOfItem(atPath: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "a 1\n")
        #expect((first[.posixPermissions] as? Int) == 0o644)
        textfile.update(Array("a 1\n".utf8))
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int) == (first[.systemFileNumber] as? Int))
        textfile.update(Array("a 2\n".utf8))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "a 2\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["reachd.prom"])
        #expect(logged.isEmpty)
        textfile.remove()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("a directory that cannot be written is logged once, and written when it can be")
    func unwritable() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("textfile-\(UUID())")
        let path = directory.appendingPathComponent("reachd.prom").path
        var logged: [String] = []
        let textfile = MetricsTextfile(path: path) { logged.append($0) }
        textfile.update(Array("a 1\n".utf8))
        textfile.update(Array("a 2\n".utf8))
        #expect(logged.count == 1 && logged[0].contains("cannot create a file beside \(path)"), "\(logged)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        textfile.update(Array("a 3\n".utf8))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "a 3\n")
        #expect(logged.count == 2 && logged[1].contains("written again"))
    }
}
