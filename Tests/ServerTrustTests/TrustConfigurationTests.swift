import Foundation
import ServerTrust
import TOML
import Testing
import X509

@Suite("[trust] configuration")
struct TrustConfigurationTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trust-config-\(UUID())")

    func load(_ text: String) throws -> TrustConfiguration {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("reachd.toml").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return try TrustConfiguration.load(contentsOf: file)
    }

    /// The error's text, `file:line: reason` without the directory.
    func failure(_ text: String) -> String {
        do {
            _ = try load(text)
            return "no error"
        } catch {
            return "\(error)".replacingOccurrences(of: directory.path + "/", with: "")
        }
    }

    @Test("every key of docs/configuration.md, relative files from the config's directory")
    func everyKey() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = try TestAuthority.root("Config Root")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("pins"), withIntermediateDirectories: true)
        try root.certificate.serializeAsPEM().pemString.write(
            to: directory.appendingPathComponent("pins/root.pem"), atomically: true, encoding: .utf8)
        let configuration = try load(
            """
            [monitor]
            ignore = ["docker*"]

            [trust]
            recheck = "both"
            interval = "6h"
            timeout = "1500ms"
            reports = "reports"

            [[trust.host]]
            match = "api.example.com"
            port = 8443
            connect = "198.51.100.7"
            mode = "public-key"
            enforce = true
            pins = ["sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", "pin-sha256=\\"AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=\\""]
            validate-chain = true
            validate-host = true
            anchors = ["pins/root.pem"]
            expires = 2027-06-30
            min-pins = 2
            revocation = "ocsp-soft"
            tls = "ats"
            report-uri = ["https://reports.example.com/pins"]

            [[trust.host]]
            match = "**.internal.example.com"
            mode = "certificate"
            certificates = ["pins/root.pem", "pins/root.pem"]
            accept-self-signed = true
            enforce = false
            tls = "none"
            """)
        #expect(configuration.recheck == .both)
        #expect(configuration.interval == .seconds(6 * 3600))
        #expect(configuration.timeout == .milliseconds(1500))
        #expect(configuration.reports == directory.path + "/reports")
        let api = try #require(configuration.hosts.lookup("API.example.com.")?.value)
        #expect(api.port == 8443 && api.connect == "198.51.100.7")
        #expect(api.policy.mode == .publicKey && api.policy.pins.count == 2)
        #expect(api.policy.anchors == [root.certificate])
        #expect(api.policy.revocation == .soft && api.policy.requiresTLSBaseline)
        #expect(api.pinSet?.hasExpired(at: try Date("2027-06-30T23:00:00Z", strategy: .iso8601)) == false)
        #expect(api.pinSet?.hasExpired(at: try Date("2027-07-01T00:00:00Z", strategy: .iso8601)) == true)
        #expect(api.reportURIs == ["https://reports.example.com/pins"])
        let intranet = try #require(configuration.hosts.lookup("a.b.internal.example.com")?.value)
        #expect(intranet.policy.acceptSelfSigned)
        #expect(!intranet.policy.requiresTLSBaseline)
        #expect(intranet.pinSet?.enforce == false)
        #expect(intranet.pinSet?.minimumPins == 1)
        #expect(configuration.probedHosts.map(\.pattern.description) == ["api.example.com"])
    }

    @Test(
        "plain-HTTP collectors only with allow-http-report-uri, and then listed (for the warning at every start); clock-synchronized names the flag file"
    )
    func plainHTTPCollectorsAndClock() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try load(
            """
            [trust]
            allow-http-report-uri = true
            clock-synchronized = "run/synchronized"
            [[trust.host]]
            match = "a.example"
            report-uri = ["http://collector.example/pins", "https://collector.example/pins"]
            """)
        #expect(configuration.allowsHTTPReportURIs && configuration.plainHTTPReportURIs == ["http://collector.example/pins"])
        #expect(configuration.clock == .flagFile(directory.path + "/run/synchronized"))
        #expect(try load("[trust]\n").clock == .system)
    }

    @Test("no [trust] table: no hosts")
    func noTable() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try load("[monitor]\n")
        #expect(configuration.hosts.entries.isEmpty)
        #expect(configuration.recheck == .onChange)
    }

    @Test(
        "mistakes name the file, the line and the reason",
        arguments: [
            ("[trust]\nrecheck = \"sometimes\"", "reachd.toml:2: recheck must be one of on-change, interval, both, not \"sometimes\""),
            (
                "[trust]\ntimeout = \"5 seconds\"",
                "reachd.toml:2: timeout must be a duration such as \"250ms\", \"5s\", \"10m\", \"6h\" or \"1d\", not \"5 seconds\""
            ),
            ("[trust]\ntimout = \"5s\"", "reachd.toml:2: unknown key 'timout' in [trust]"),
            ("[[trust.host]]\nport = 443", "reachd.toml:1: [[trust.host]] needs match = \"host name\""),
            ("[[trust.host]]\nmatch = \"**.com\"", "reachd.toml:2: host pattern \"**.com\" covers the public suffix com"),
            (
                "[[trust.host]]\nmatch = \"a.example\"\nmode = \"public-key\"\npins = [\"sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\"]",
                "reachd.toml:1: a.example: 1 pin configured, min-pins requires 2 (a backup pin)"
            ),
            (
                "[[trust.host]]\nmatch = \"a.example\"\nmode = \"public-key\"\npins = [\"sha256/short\"]",
                "reachd.toml:4: pin \"sha256/short\""
            ),
            (
                "[[trust.host]]\nmatch = \"a.example\"\nvalidate-chain = false",
                "reachd.toml:1: a.example: allowing invalid certificates while validating the host name without pinning protects nothing: you must use pinning"
            ),
            ("[[trust.host]]\nmatch = \"a.example\"\nmode = \"certificate\"\ncertificates = [\"missing.pem\"]", "reachd.toml:4: "),
            (
                "[[trust.host]]\nmatch = \"a.example\"\nexpires = \"soon\"",
                "reachd.toml:3: expires must be a date such as 2027-06-30, not a string"
            ),
            ("[[trust.host]]\nmatch = \"a.example\"\nexpires = 2027-02-29", "reachd.toml:3: "),
            ("[[trust.host]]\nmatch = \"a.example\"\nenforce = false", "reachd.toml:3: expires, enforce and min-pins apply to pins"),
            ("[[trust.host]]\nmatch = \"a.example\"\nconnect = \"example.net\"", "reachd.toml:3: connect must be an IPv4 or IPv6 address"),
            (
                "[[trust.host]]\nmatch = \"a.example\"\n[[trust.host]]\nmatch = \"A.example.\"",
                "reachd.toml:3: host pattern \"a.example\" is configured twice"
            ),
            ("[[trust.host]]\nmatch = \"a.example\"\ncolour = \"blue\"", "reachd.toml:3: unknown key 'colour' in [[trust.host]]"),
            (
                "[[trust.host]]\nmatch = \"a.example\"\nreport-uri = [\"http://collector.example/pins\"]",
                "reachd.toml:1: report-uri \"http://collector.example/pins\" is plain HTTP: anyone on the path can read the report, and answer for the collector; use https://, or set allow-http-report-uri = true in [trust]"
            )
        ])
    func mistakes(text: String, expected: String) {
        defer { try? FileManager.default.removeItem(at: directory) }
        let message = failure(text)
        #expect(message.hasPrefix(expected), "\(message)")
    }
}
