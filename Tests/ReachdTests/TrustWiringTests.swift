import Foundation
import NamespaceTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("reachd's trust checks", .serialized)
struct TrustWiringTests {
    let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]

    /// A CA and a server certificate for pinned.test, made by openssl in `directory`.
    func makePKI(in directory: URL) throws {
        let script = """
            set -e
            cd '\(directory.path)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 30 -subj /CN=WiringCA \
              -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=pinned.test 2>/dev/null
            printf 'subjectAltName=DNS:pinned.test\\nextendedKeyUsage=serverAuth\\nkeyUsage=critical,digitalSignature\\nauthorityKeyIdentifier=keyid\\nbasicConstraints=critical,CA:FALSE\\n' > ext
            openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 10 -extfile ext -out leaf.pem 2>/dev/null
            """
        try run(["/bin/sh", "-c", script])
    }

    /// `openssl s_server` for pinned.test on 10.1.0.1:8443 in `router`, once it listens.
    func serveTLS(in router: TestNamespace, from directory: URL) async throws -> Process {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["ip", "netns", "exec", router.name, "openssl", "s_server", "-accept", "10.1.0.1:8443",
                            "-cert", directory.appendingPathComponent("leaf.pem").path,
                            "-key", directory.appendingPathComponent("leaf.key").path, "-quiet"]
        server.standardInput = Pipe()
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        #expect(try await eventually { !(try router.exec(["ss", "-Hltn", "sport = :8443"]).output.isEmpty) })
        return server
    }

    @Test("a pinned host whose pins do not match: Trust compromised, the report spooled, PinFailure signalled once")
    func pinFailure() async throws {
        try await withScratch { scratch in
            try makePKI(in: scratch)
            let reports = scratch.appendingPathComponent("reports")
            let config = scratch.appendingPathComponent("reachd.toml")
            try """
                [trust]
                timeout = "2s"
                reports = "\(reports.path)"

                [[trust.host]]
                match = "pinned.test"
                port = 8443
                connect = "10.1.0.1"
                mode = "public-key"
                pins = ["sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", "sha256/AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="]
                anchors = ["ca.pem"]
                """.write(to: config, atomically: true, encoding: .utf8)
            let bus = try TestSystemBus(directory: scratch)
            defer { bus.stop() }
            try await withNamespaces("rdtrust", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let server = try await serveTLS(in: ns[1], from: scratch)
                defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }

                let signals = scratch.appendingPathComponent("signals.txt")
                _ = FileManager.default.createFile(atPath: signals.path, contents: nil)
                let monitor = Process()
                monitor.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                monitor.arguments = ["busctl", "--address=\(bus.address)", "monitor", "--match", "type='signal',interface='io.reachd.Reachability1'"]
                monitor.standardOutput = try FileHandle(forWritingTo: signals)
                monitor.standardError = FileHandle.nullDevice
                try monitor.run()
                defer { kill(monitor.processIdentifier, SIGKILL); monitor.waitUntilExit() }
                try await Task.sleep(for: .milliseconds(300))

                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", bus.address, "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                let busctl = ["busctl", "--address=\(bus.address)"]
                #expect(try await eventually(.seconds(20)) {
                    try run(busctl + ["get-property"] + object + ["Trust"]).output == "s \"compromised\"\n"
                }, "\(daemon.log)")
                let spooled = try FileManager.default.contentsOfDirectory(atPath: reports.path).filter { $0.hasSuffix(".json") }
                #expect(spooled.count == 1)
                func text() -> String { (try? String(contentsOf: signals, encoding: .utf8)) ?? "" }
                #expect(await eventually { text().contains("Member=PinFailure") && text().contains("Member=TrustChanged") }, "\(text())")
                #expect(text().contains("pin-mismatch"))
                let status = try run(busctl + ["call"] + object + ["TrustStatus"]).output
                #expect(status.contains("\\\"verdict\\\":\\\"pin-mismatch\\\""), "\(status)")
                let ctl = try ns[0].exec([DaemonProcess.reachctl, "trust", "status", "--bus", daemon.socket])
                #expect(ctl.output.hasPrefix("trust: compromised\n  pinned.test:8443  pin-mismatch"), "\(ctl.output)")

                // RecheckTrust runs a round, and is rate-limited.
                try run(busctl + ["call"] + object + ["RecheckTrust"])
                let limited = try run(busctl + ["call"] + object + ["RecheckTrust"], check: false)
                #expect(limited.status != 0 && limited.error.contains("rate-limited"), "\(limited.error)")

                // A path change re-checks; the identical report is neither spooled nor signalled again.
                try ns[0].ip("route del default")
                try ns[0].ip("route add default via 10.1.0.1")
                #expect(await eventually { daemon.log.components(separatedBy: "trust: checking").count >= 4 })
                try await Task.sleep(for: .seconds(1))
                #expect(try FileManager.default.contentsOfDirectory(atPath: reports.path).filter { $0.hasSuffix(".json") }.count == 1)
                #expect(text().components(separatedBy: "Member=PinFailure").count == 2, "one PinFailure signal")
            }
        }
    }

    @Test("a pin set with no backup key is warned about once per config loaded, not every round")
    func backupPinWarningOnce() async throws {
        try await withScratch { scratch in
            try makePKI(in: scratch)
            let pins = try ["leaf.pem", "ca.pem"].map { file in
                "sha256/" + (try run(["/bin/sh", "-c", "openssl x509 -in '\(scratch.appendingPathComponent(file).path)' -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64"]).output
                    .trimmingCharacters(in: .whitespacesAndNewlines))
            }
            let config = scratch.appendingPathComponent("reachd.toml")
            try """
                [trust]
                timeout = "2s"
                reports = "\(scratch.appendingPathComponent("reports").path)"

                [[trust.host]]
                match = "pinned.test"
                port = 8443
                connect = "10.1.0.1"
                mode = "public-key"
                pins = ["\(pins[0])", "\(pins[1])"]
                anchors = ["ca.pem"]
                """.write(to: config, atomically: true, encoding: .utf8)
            try await withNamespaces("rdbackup", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let server = try await serveTLS(in: ns[1], from: scratch)
                defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }

                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                func count(_ text: String) -> Int { daemon.log.components(separatedBy: text).count - 1 }
                let warning = "every pin is a key of the current chain"
                #expect(await eventually(.seconds(20)) { count("trust: ok") == 1 }, "\(daemon.log)")
                // Two more rounds, on two path changes.
                for _ in 0..<2 {
                    try ns[0].ip("route del default")
                    try ns[0].ip("route add default via 10.1.0.1")
                }
                #expect(await eventually(.seconds(20)) { count("trust: checking") >= 3 }, "\(daemon.log)")
                try await Task.sleep(for: .seconds(1))  // the last round (a local handshake) ends
                #expect(count(warning) == 1, "\(daemon.log)")
                // A reload is a new config: said once more.
                daemon.signal(SIGHUP)
                #expect(await eventually(.seconds(20)) { count(warning) == 2 }, "\(daemon.log)")
            }
        }
    }

    @Test("recheck = \"interval\": a round at start, none on a path change, the next after the interval",
          .timeLimit(.minutes(3)))
    func intervalRecheck() async throws {
        try await withScratch { scratch in
            let config = scratch.appendingPathComponent("reachd.toml")
            try """
                [trust]
                recheck = "interval"
                interval = "1m"
                timeout = "1s"
                reports = "\(scratch.appendingPathComponent("reports").path)"

                [[trust.host]]
                match = "api.test"
                port = 8443
                connect = "10.1.0.1"
                """.write(to: config, atomically: true, encoding: .utf8)
            try await withNamespaces("rdinterval", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                func rounds() -> [String] { daemon.log.split(separator: "\n").filter { $0.contains("trust: checking") }.map(String.init) }
                #expect(await eventually { rounds().count == 1 }, "\(daemon.log)")
                #expect(rounds().first?.hasSuffix("(start)") == true, "\(rounds())")

                try ns[0].ip("route del default")
                #expect(await eventually { daemon.log.contains("path: unreachable") })
                try ns[0].ip("route add default via 10.1.0.1")
                #expect(await eventually { daemon.log.components(separatedBy: "path: wired").count == 3 }, "\(daemon.log)")
                try await Task.sleep(for: .seconds(1))
                #expect(rounds().count == 1, "a path change does not re-check: \(rounds())")

                #expect(await eventually(.seconds(90)) { rounds().count == 2 }, "\(daemon.log)")
                #expect(rounds().last?.hasSuffix("(interval)") == true, "\(rounds())")
            }
        }
    }
}
