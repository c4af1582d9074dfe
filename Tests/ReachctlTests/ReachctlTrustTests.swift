import Foundation
import NamespaceTesting
import TestTraits
import Testing

/// `reachctl trust …` as a user runs it, with a CA and a server certificate made by
/// openssl: offline, and against `openssl s_server` on loopback, as any user.
@Suite("reachctl trust (binary, openssl s_server)", .ownThreads)
struct ReachctlTrustTests {
    let reachctl = ReachctlTests.reachctl
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ctltrust-\(UUID())").path

    /// A CA, a server certificate for localhost signed by it, and the CA's and server's pins.
    func makePKI() throws -> (leafPin: String, caPin: String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd '\(directory)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 30 -subj /CN=TestCA \
              -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=localhost 2>/dev/null
            printf 'subjectAltName=DNS:localhost\\nextendedKeyUsage=serverAuth\\nkeyUsage=critical,digitalSignature\\nauthorityKeyIdentifier=keyid\\nbasicConstraints=critical,CA:FALSE\\n' > ext
            openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 10 -extfile ext -out leaf.pem 2>/dev/null
            """
        try run(["/bin/sh", "-c", script])
        func pin(_ file: String) throws -> String {
            "sha256/"
                + (try run([
                    "/bin/sh", "-c",
                    "openssl x509 -in '\(directory)/\(file)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"
                ]).output
                    .trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return (try pin("leaf.pem"), try pin("ca.pem"))
    }

    func file(_ name: String) -> String { "\(directory)/\(name)" }

    func json(_ text: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
    }

    @Test("the TLS commands run in reachd-trust: reachctl links no TLS code and no full Foundation")
    func tlsCommandsRunInTheHelper() throws {
        // Every `reachctl status` would pay Foundation's 7–8 MB and 50–70 ms at start otherwise.
        let symbols = try run(["nm", reachctl]).output
        #expect(!symbols.contains("$s10Foundation"), "reachctl links Foundation")
        #expect(!symbols.contains("NIOSSL") && !symbols.contains("$s4X509"), "reachctl links TLS code")

        // Without reachd-trust beside it (or in ../libexec) reachctl says so and exits 2.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let alone = directory + "/reachctl"
        // Copied by cp, not in this process: a child another test forks meanwhile would inherit the
        // copy's open descriptor until it execs, and executing the copy would fail with ETXTBSY.
        try run(["cp", reachctl, alone])
        let result = try run([alone, "trust", "pin", "/etc/ssl/certs/ca-certificates.crt"], check: false)
        #expect(result.status == 2, "\(result)")
        #expect(
            result.error
                == "reachctl: trust pin runs in reachd-trust, which is not installed (looked for \(directory)/reachd-trust or \(directory)/../libexec/reachd-trust)\n"
        )
        // reachd-trust answers help for them, with reachctl's usage.
        #expect(try run([reachctl, "trust", "check", "--help"]).output.contains("USAGE: reachctl trust check <host[:port]>"))
        #expect(try run([reachctl, "help", "trust", "check"]).output.contains("USAGE: reachctl trust check <host[:port]>"))
    }

    @Test("pin and verify work offline, with openssl's pins and the documented exit codes")
    func offline() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (leafPin, caPin) = try makePKI()
        let pins = try run([reachctl, "trust", "pin", file("leaf.pem")]).output
        #expect(pins == "\(leafPin)  CN=localhost\n")

        let trusted = try run([reachctl, "trust", "verify", file("leaf.pem"), "--host", "localhost", "--ca", file("ca.pem"), "--json"])
        #expect(try json(trusted.output)["verdict"] as? String == "trusted")
        let pinned = try run([reachctl, "trust", "verify", file("leaf.pem"), "--host", "localhost", "--ca", file("ca.pem"), "--pin", caPin])
        #expect(pinned.output.hasPrefix("localhost: trusted"), "a pin on the CA the chain file does not hold")

        let cases: [([String], String)] = [
            (["--host", "example.org", "--ca", file("ca.pem")], "host-mismatch"),
            (["--host", "localhost", "--ca", file("ca.pem"), "--at", "2000-01-01"], "expired"),
            (
                ["--host", "localhost", "--ca", file("ca.pem"), "--pin", "sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="],
                "pin-mismatch"
            ),
            (["--host", "localhost"], "chain-invalid")
        ]
        for (flags, verdict) in cases {
            let result = try run([reachctl, "trust", "verify", file("leaf.pem")] + flags, check: false)
            #expect(result.status == 1, "\(flags)")
            #expect(
                result.output.hasPrefix("localhost: \(verdict)") || result.output.hasPrefix("example.org: \(verdict)"),
                "\(flags): \(result.output)")
        }
        let garbage = try run([reachctl, "trust", "verify", file("ext")], check: false)
        #expect(garbage.status == 1)
        #expect(garbage.error.hasPrefix("reachctl: reading the chain: \(file("ext")):"), "\(garbage.error)")
    }

    @Test("check, pin and diagnose against a server: exit 0 trusted, 1 not, 2 unreachable")
    func online() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (leafPin, caPin) = try makePKI()
        // The server on loopback at a free port (any user may serve there), and a port nobody serves.
        let port = try PinnedServer.freeLoopbackPort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = [
            "openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", file("leaf.pem"), "-key", file("leaf.key"), "-quiet"
        ]
        server.standardInput = Pipe()
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        try await waitUntilListening("sport = :\(port)", server: server)
        let closedPort = try PinnedServer.freeLoopbackPort()
        let trusted = try run([reachctl, "trust", "check", "localhost:\(port)", "--ca", file("ca.pem"), "--pin", caPin, "--json"])
        let document = try json(trusted.output)
        #expect(document["verdict"] as? String == "trusted")
        #expect(document["tls-version"] as? String == "TLS 1.3")
        #expect(document["presented-pins"] as? [String] == [leafPin])

        let wrong = try run(
            [
                reachctl, "trust", "check", "localhost:\(port)", "--ca", file("ca.pem"),
                "--pin", "sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="
            ], check: false)
        #expect(wrong.status == 1)
        #expect(wrong.output.hasPrefix("localhost:\(port): pin-mismatch"), "\(wrong.output)")
        let closed = try run([reachctl, "trust", "check", "localhost:\(closedPort)", "--ca", file("ca.pem")], check: false)
        #expect(closed.status == 2)
        #expect(closed.output.contains("unreachable"))

        // The policy from the config: the port and the pins of the matching entry.
        try """
        [trust]
        timeout = "2s"
        [[trust.host]]
        match = "localhost"
        port = \(port)
        mode = "public-key"
        pins = ["\(caPin)", "sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="]
        anchors = ["ca.pem"]
        """.write(toFile: file("reachd.toml"), atomically: true, encoding: .utf8)
        let configured = try run([reachctl, "trust", "check", "localhost", "--config", file("reachd.toml")])
        #expect(configured.output.hasPrefix("localhost:\(port): trusted"), "\(configured.output)")

        let served = try run([reachctl, "trust", "pin", "https://127.0.0.1:\(port)"]).output
        #expect(served == "\(leafPin)  CN=localhost\n", "printed although the chain does not validate for 127.0.0.1")

        let diagnosis = try run([reachctl, "trust", "diagnose", "https://localhost:\(port)", "--ca", file("ca.pem")])
        #expect(diagnosis.status == 0)
        #expect(diagnosis.output.contains("TLS 1.3 (forward-secret)          accepted  ATS: PASS"), "\(diagnosis.output)")
        #expect(diagnosis.output.contains("TLS 1.2 static RSA key exchange   refused   ATS: below the baseline"))
        #expect(diagnosis.output.hasSuffix("ATS: PASS — an ATS client connects\n"))
        let diagnosisJSON = try json(
            try run([reachctl, "trust", "diagnose", "https://localhost:\(port)", "--ca", file("ca.pem"), "--json"]).output)
        #expect((diagnosisJSON["configurations"] as? [Any])?.count == 7)
        #expect(diagnosisJSON["ats"] as? String == "pass")
    }
}
