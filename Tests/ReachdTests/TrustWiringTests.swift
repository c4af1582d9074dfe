import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("reachd's trust checks", .serialized, .needsNamespaces, .ownThreads)
struct TrustWiringTests {
    let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]

    @Test(
        "a pinned host whose pins do not match: Trust compromised, the report spooled, PinFailure signalled once",
        .needsSystemBusName)
    func pinFailure() async throws {
        try await withScratch { scratch in
            try PinnedServer.makePKI(in: scratch)
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
                let server = try await PinnedServer.serve(in: ns[1], from: scratch)
                defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }

                let signals = scratch.appendingPathComponent("signals.txt")
                _ = FileManager.default.createFile(atPath: signals.path, contents: nil)
                let monitor = Process()
                monitor.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                monitor.arguments = [
                    "busctl", "--address=\(bus.address)", "monitor", "--match", "type='signal',interface='io.reachd.Reachability1'"
                ]
                monitor.standardOutput = try FileHandle(forWritingTo: signals)
                monitor.standardError = FileHandle.nullDevice
                try monitor.run()
                defer { kill(monitor.processIdentifier, SIGKILL); monitor.waitUntilExit() }
                try await Task.sleep(for: .milliseconds(300))

                // The typed streams of ReachabilityClient, subscribed before the daemon runs (they reconnect until it answers).
                let client = ReachabilityClient(endpoint: .address(bus.address), reconnectDelays: (.milliseconds(5), .milliseconds(10)))
                let failures = Collected(client.pinFailures)
                let verdicts = Collected(client.trustChanges)
                defer { failures.cancel(); verdicts.cancel() }

                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", bus.address, "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                let busctl = ["busctl", "--address=\(bus.address)"]
                #expect(
                    try await eventually(.seconds(20)) {
                        try run(busctl + ["get-property"] + object + ["Trust"]).output == "s \"compromised\"\n"
                    }, "\(daemon.log)")
                #expect(await eventually { verdicts.all.last?.overall == .compromised }, "\(verdicts.all)")
                #expect(verdicts.all.last?.hosts.first?.verdict == .pinMismatch)
                #expect(await eventually { failures.all.count == 1 }, "the report, typed")
                #expect(failures.all.first?.hostname == "pinned.test" && failures.all.first?.validationResult == .pinMismatch)
                #expect(failures.all.first?.knownPins.count == 2 && failures.all.first?.enforcePinning == true)
                #expect(failures.all.first?.captivePortal == nil)
                let spooled = try FileManager.default.contentsOfDirectory(atPath: reports.path).filter { $0.hasSuffix(".json") }
                #expect(spooled.count == 1)
                func text() -> String { (try? String(contentsOf: signals, encoding: .utf8)) ?? "" }
                #expect(await eventually { text().contains("Member=PinFailure") && text().contains("Member=TrustChanged") }, "\(text())")
                #expect(text().contains("pin-mismatch"))
                let status = try run(busctl + ["call"] + object + ["TrustStatus"]).output
                #expect(status.contains("\\\"verdict\\\":\\\"pin-mismatch\\\""), "\(status)")
                let ctl = try ns[0].exec([DaemonProcess.reachctl, "trust", "status", "--bus", daemon.socket])
                #expect(ctl.output.hasPrefix("trust: compromised\n  pinned.test:8443  pin-mismatch"), "\(ctl.output)")

                // RecheckTrust runs a round: each user at most once per 10 s, another user meanwhile, root always.
                try run(busctl + ["call"] + object + ["RecheckTrust"])
                try run(busctl + ["call"] + object + ["RecheckTrust"])
                let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                try run(nobody + busctl + ["call"] + object + ["RecheckTrust"])
                let limited = try run(nobody + busctl + ["call"] + object + ["RecheckTrust"], check: false)
                #expect(limited.status != 0 && limited.error.contains("rate-limited to once per 10 s for each user"), "\(limited.error)")
                let other = try run(
                    ["setpriv", "--reuid=daemon", "--regid=daemon", "--clear-groups"] + busctl + ["call"] + object + ["RecheckTrust"],
                    check: false)
                #expect(other.status == 0, "another user is not held back by the first: \(other.error)")

                // A path change re-checks; the identical report is neither spooled nor signalled again.
                try ns[0].ip("route del default")
                try ns[0].ip("route add default via 10.1.0.1")
                // Two path changes: at least one more round (rounds start at least 2 s apart; the second change may join the first's).
                #expect(await eventually(.seconds(20)) { daemon.log.components(separatedBy: "trust: checking").count >= 3 })
                try await Task.sleep(for: .seconds(1))
                #expect(try FileManager.default.contentsOfDirectory(atPath: reports.path).filter { $0.hasSuffix(".json") }.count == 1)
                #expect(text().components(separatedBy: "Member=PinFailure").count == 2, "one PinFailure signal")
            }
        }
    }

    /// A collector of pin-failure reports: each POST body one line of FILE, answered 204;
    /// over TLS with CERTIFICATE and KEY when given.
    static let collector = """
        import http.server, ssl, sys
        class Collector(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with open(sys.argv[3], "ab") as out: out.write(body + b"\\n")
                self.send_response(204)
                self.end_headers()
            def log_message(self, *arguments): pass
        server = http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), Collector)
        if len(sys.argv) > 5:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[4], sys.argv[5])
            server.socket = context.wrap_socket(server.socket, server_side=True)
        server.serve_forever()
        """

    /// `collector` in `router` on 10.1.0.1:`port`, writing what it receives to `received`, once it listens.
    static func startCollector(
        in router: TestNamespace, script: URL, port: Int, received: URL, tls: (certificate: URL, key: URL)? = nil
    ) async throws -> Process {
        let collector = Process()
        collector.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        collector.arguments =
            ["ip", "netns", "exec", router.name, "/usr/bin/python3", script.path, "10.1.0.1", String(port), received.path]
            + (tls.map { [$0.certificate.path, $0.key.path] } ?? [])
        collector.standardError = FileHandle.nullDevice
        try collector.run()
        try await router.waitUntilListening("sport = :\(port)", server: collector)
        return collector
    }

    @Test(
        "one host intercepted throughout: its reports still reach the genuine https collector — kept while a portal or an interceptor answers for the collector, delivered by the pass that follows once the genuine one answers",
        .timeLimit(.minutes(3)))
    func interceptedHostReportsDelivered() async throws {
        try await withScratch { scratch in
            try PinnedServer.makePKI(in: scratch)
            // collector.test under the config's CA (the genuine one), and self-signed (whoever intercepts it).
            try run([
                "/bin/sh", "-c",
                """
                set -e
                cd '\(scratch.path)'
                openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout collector.key -out collector.csr -subj /CN=collector.test 2>/dev/null
                printf 'subjectAltName=DNS:collector.test\\nextendedKeyUsage=serverAuth\\nbasicConstraints=critical,CA:FALSE\\n' > collector.ext
                openssl x509 -req -in collector.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 10 -extfile collector.ext -out collector.pem 2>/dev/null
                openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout rogue.key -out rogue.pem -days 5 \
                  -subj /CN=collector.test -addext subjectAltName=DNS:collector.test 2>/dev/null
                """
            ])
            // pinned.test's pins name neither its key nor its CA's: intercepted, for good.
            let config = try PinnedServer.config(
                pins: ["sha256/" + String(repeating: "A", count: 43) + "=", "sha256/" + String(repeating: "B", count: 43) + "="],
                in: scratch)
            try
                (String(contentsOf: config, encoding: .utf8) + """

                    report-uri = ["https://collector.test:9443/pins"]

                    [[trust.host]]
                    match = "collector.test"
                    port = 9443
                    connect = "10.1.0.1"
                    anchors = ["ca.pem"]
                    """ + ConnectivityTests.connectivity(uri: "http://10.1.0.1/generate_204")).write(
                    to: config, atomically: true, encoding: .utf8)
            let script = scratch.appendingPathComponent("collector.py")
            try Self.collector.write(to: script, atomically: true, encoding: .utf8)
            let (received, intercepted) = (
                scratch.appendingPathComponent("received.jsonl"), scratch.appendingPathComponent("intercepted.jsonl")
            )
            func lines(_ file: URL) -> Int { ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n").count }
            try await withNamespaces("rdreport", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let probe = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "redirect")
                defer { probe.stop() }
                let server = try await PinnedServer.serve(in: ns[1], from: scratch)
                defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
                // Behind the portal, someone answers for the collector (the portal's own TLS, an interceptor).
                let rogue = try await Self.startCollector(
                    in: ns[1], script: script, port: 9443, received: intercepted,
                    tls: (scratch.appendingPathComponent("rogue.pem"), scratch.appendingPathComponent("rogue.key")))
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                func status() -> String { (try? daemon.busctl(["call"] + object + ["TrustStatus"]).output) ?? "" }
                // Subscribed at once (the client retries until the socket answers): the first round waits for the probe.
                let client = ReachabilityClient(endpoint: .address(daemon.address), reconnectDelays: (.milliseconds(5), .milliseconds(10)))
                let failures = Collected(client.pinFailures)
                defer { failures.cancel() }

                // 1. A portal, and the collector intercepted: the report is spooled and kept.
                #expect(await eventually(.seconds(30)) { daemon.log.contains("collector.test is not trusted") }, "\(daemon.log)")
                // The failure seen behind the portal is signalled with the portal's mark: what the probe got.
                #expect(await eventually { !failures.all.isEmpty }, "\(daemon.log)")
                #expect(
                    failures.all.first?.hostname == "pinned.test" && failures.all.first?.captivePortal?.kind == .redirect
                        && failures.all.first?.captivePortal?.httpStatus == 302, "\(String(describing: failures.all.first?.captivePortal))")
                #expect(lines(intercepted) == 0, "an interceptor of the collector is sent nothing")
                #expect(status().contains(#"\"reports-pending\":1"#), "\(status())")

                // 2. Logged in; pinned.test stays intercepted (compromised) while the genuine collector
                // answers: the pass that follows the round delivers — the verdict holds nothing back.
                kill(rogue.processIdentifier, SIGKILL)
                rogue.waitUntilExit()
                let genuine = try await Self.startCollector(
                    in: ns[1], script: script, port: 9443, received: received,
                    tls: (scratch.appendingPathComponent("collector.pem"), scratch.appendingPathComponent("collector.key")))
                defer { kill(genuine.processIdentifier, SIGKILL); genuine.waitUntilExit() }
                try probe.set("204")
                let login = ContinuousClock.now
                try daemon.busctl(["call"] + object + ["CheckConnectivity"])
                #expect(await eventually(.seconds(20)) { status().contains(#"\"trust\":\"compromised\""#) }, "\(status())")
                #expect(await eventually(.seconds(30)) { status().contains(#"\"reports-pending\":0"#) }, "\(status())\n\(daemon.log)")
                print("reports: delivered \(login.duration(to: .now)) after the login, over a compromised path")
                #expect(lines(received) >= 1 && lines(intercepted) == 0)
                #expect(daemon.log.contains("waiting reports delivered"), "\(daemon.log)")
            }
        }
    }

    @Test(
        "a report whose collector is down waits in the outbox: counted, retried within 30 s, delivered after a restart (report-only pins, the path full: nothing held back)",
        .timeLimit(.minutes(3)))
    func reportDeliveryRetried() async throws {
        try await withScratch { scratch in
            try PinnedServer.makePKI(in: scratch)
            func configure(pin: Character) throws -> URL {
                let pins = [String(repeating: pin, count: 43) + "=", String(repeating: "B", count: 43) + "="].map { "sha256/" + $0 }
                let config = try PinnedServer.config(pins: pins, in: scratch)
                try
                    (String(contentsOf: config, encoding: .utf8).replacingOccurrences(
                        of: "[trust]\n", with: "[trust]\nallow-http-report-uri = true\n")
                    + "\nreport-uri = [\"http://10.1.0.1:8080/pins\"]\nenforce = false\n"
                    + ConnectivityTests.connectivity(uri: "http://10.1.0.1/generate_204"))
                    .write(to: config, atomically: true, encoding: .utf8)
                return config
            }
            let config = try configure(pin: "A")
            let script = scratch.appendingPathComponent("collector.py")
            try Self.collector.write(to: script, atomically: true, encoding: .utf8)
            let received = scratch.appendingPathComponent("received.jsonl")
            let outbox = scratch.appendingPathComponent("reports/outbox").path
            try await withNamespaces("rdoutbox", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let probe = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "204")
                defer { probe.stop() }
                let server = try await PinnedServer.serve(in: ns[1], from: scratch)
                defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
                func startCollector() async throws -> Process {
                    try await Self.startCollector(in: ns[1], script: script, port: 8080, received: received)
                }
                func reports() -> Int { ((try? String(contentsOf: received, encoding: .utf8)) ?? "").split(separator: "\n").count }
                func pending(_ daemon: DaemonProcess) -> String {
                    (try? daemon.busctl(["call"] + object + ["TrustStatus"]).output) ?? ""
                }
                func waiting() -> Int { ((try? FileManager.default.contentsOfDirectory(atPath: outbox)) ?? []).count }

                // The collector is down: the report waits, and says so.
                var daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                #expect(await eventually(.seconds(20)) { pending(daemon).contains(#"\"reports-pending\":1"#) }, "\(daemon.log)")
                let ctl = try ns[0].exec([DaemonProcess.reachctl, "trust", "status", "--bus", daemon.socket])
                #expect(ctl.output.contains("reports: 1 waiting for their collectors"), "\(ctl.output)")
                #expect(waiting() == 1)

                // It comes back: the next retry (15 s after the report) delivers.
                var collector = try await startCollector()
                let back = ContinuousClock.now
                #expect(await eventually(.seconds(30)) { reports() == 1 }, "\(daemon.log)")
                print("outbox: delivered \(back.duration(to: .now)) after the collector came back")
                #expect(await eventually { pending(daemon).contains(#"\"reports-pending\":0"#) && waiting() == 0 })
                #expect(daemon.log.contains("1 waiting reports delivered"), "\(daemon.log)")

                // Down again; a new failure (other pins) waits; the daemon restarts; the
                // collector is back before it: the first round after the start delivers.
                kill(collector.processIdentifier, SIGKILL)
                collector.waitUntilExit()
                _ = try configure(pin: "C")
                daemon.signal(SIGHUP)
                #expect(await eventually(.seconds(20)) { waiting() == 1 }, "\(daemon.log)")
                await daemon.stop()
                collector = try await startCollector()
                defer { kill(collector.processIdentifier, SIGKILL); collector.waitUntilExit() }
                try await Task.sleep(for: .milliseconds(300))
                daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { [daemon] in await daemon.stop() } }
                #expect(await eventually(.seconds(10)) { reports() == 2 && waiting() == 0 }, "\(daemon.log)")
                #expect(reports() == 2, "each report once")
            }
        }
    }
}
