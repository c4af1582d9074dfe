import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import ProgramSupport
import SystemCalls
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `[metrics]` exports of reachd (`ServedDaemon`, as any user, its listener on a free
/// loopback port), read by curl, promtool and a real Prometheus server.
@Suite("reachd's Prometheus metrics (embedded kernel, loopback)", .serialized, .ownThreads)
struct MetricsTests {
    static let openMetrics =
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    static let defaultRoute = EmbeddedKernel.Route.defaultRoute(via: IPAddress("10.1.0.1")!, interface: EmbeddedKernel.uplink)

    @Test(
        "a pinned host: the scrape passes promtool, its values are right, OpenMetrics on request, the textfile follows, Prometheus sees the path go down"
    )
    func scrapeAndTextfile() async throws {
        try await withScratch { scratch in
            try PinnedServer.makePKI(in: scratch)
            let textfiles = scratch.appendingPathComponent("textfile")
            try FileManager.default.createDirectory(at: textfiles, withIntermediateDirectories: true)
            let textfile = textfiles.appendingPathComponent("reachd.prom")
            let (server, pinnedPort) = try await PinnedServer.serveOnLoopback(from: scratch)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            let port = try PinnedServer.freeLoopbackPort()
            let config =
                try TrustRoundsTests.pinnedConfig(in: scratch, port: pinnedPort)
                + "\n\n[metrics]\nlisten = \"127.0.0.1:\(port)\"\ntextfile = \"\(textfile.path)\"\n"
            try await ServedDaemon.serving(config: config, trustHelper: true, { $0.addUplink(subnet: "10.1.0") }) { daemon in
                let verdict = "reachd_trust_verdict{host=\"pinned.test\",verdict=\"trusted\"}"
                var scrape = ""
                #expect(
                    await eventually(.seconds(20)) {
                        scrape = scrapeMetrics(port: port)
                        return metricValue(verdict, in: scrape) == 1
                    }, "\(scrape)\n\(daemon.log)")
                let check = try run(["promtool", "check", "metrics"], check: false, input: scrape)
                #expect(check.status == 0 && check.output.isEmpty && check.error.isEmpty, "\(check.output)\(check.error)")

                #expect(metricValue("reachd_build_info{version=\"\(reachdVersion)\"}", in: scrape) == 1)
                #expect(metricValue("reachd_path_up", in: scrape) == 1)
                for status in ["unknown", "unreachable", "wifi", "wired", "cellular"] {
                    #expect(metricValue("reachd_path_status{status=\"\(status)\"}", in: scrape) == (status == "wired" ? 1 : 0))
                }
                for trust in ["none", "unknown", "ok", "degraded", "portal", "compromised"] {
                    #expect(metricValue("reachd_trust_status{trust=\"\(trust)\"}", in: scrape) == (trust == "ok" ? 1 : 0))
                }
                // Every verdict present, one of them 1.
                #expect(scrape.split(separator: "\n").filter { $0.hasPrefix("reachd_trust_verdict{host=\"pinned.test\"") }.count == 12)
                // No probe configured: a host whose chain validated is the evidence of `full`.
                #expect(metricValue("reachd_connectivity{state=\"full\"}", in: scrape) == 1)
                #expect(metricValue("reachd_trust_checks_total{host=\"pinned.test\"}", in: scrape) ?? 0 >= 1)
                #expect(metricValue("reachd_pin_failures_total{host=\"pinned.test\"}", in: scrape) == 0)
                #expect(metricValue("reachd_reports_pending", in: scrape) == 0)
                #expect(metricValue("reachd_netlink_overruns_total", in: scrape) == 0)
                // The leaf (10 days) expires before its CA (30 days): the chain's earliest notAfter.
                let notAfter = try run(["openssl", "x509", "-enddate", "-noout", "-in", scratch.appendingPathComponent("leaf.pem").path])
                    .output.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "notAfter=", with: "")
                let expires = try run(["date", "-u", "-d", notAfter, "+%s"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(metricValue("reachd_trust_cert_expiry_timestamp_seconds{host=\"pinned.test\"}", in: scrape) == Double(expires))

                let open = scrapeMetrics(port: port, accept: Self.openMetrics)
                #expect(open.hasSuffix("# EOF\n") && open.contains("# TYPE reachd_path_changes counter\n"), "\(open)")
                let headers = try run([
                    "curl", "-sS", "-o", "/dev/null", "-D", "-", "-H", "Accept: \(Self.openMetrics)", "http://127.0.0.1:\(port)/metrics"
                ]).output
                #expect(headers.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"), "\(headers)")
                for (arguments, status) in [
                    (["http://127.0.0.1:\(port)/"], "404"), (["-X", "POST", "http://127.0.0.1:\(port)/metrics"], "405")
                ] {
                    let answer = try run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}"] + arguments).output
                    #expect(answer == status)
                }

                // The textfile is the same exposition, and only it is in the directory.
                #expect(await eventually { (try? String(contentsOf: textfile, encoding: .utf8)) == scrapeMetrics(port: port) })
                let prometheus = try Self.startPrometheus(scraping: port, directory: scratch)
                defer { kill(prometheus.process.processIdentifier, SIGTERM); prometheus.process.waitUntilExit() }
                #expect(await eventually(.seconds(30)) { prometheus.query("up") == 1 }, "Prometheus never scraped reachd")
                #expect(await eventually(.seconds(30)) { prometheus.query("reachd_path_up") == 1 })

                // The path goes: the textfile follows at once, Prometheus at its next scrape.
                daemon.kernel.deleteRoute(Self.defaultRoute)
                let deleted = ContinuousClock.now
                #expect(await eventually { (try? String(contentsOf: textfile, encoding: .utf8))?.contains("\nreachd_path_up 0\n") == true })
                let followed = deleted.duration(to: .now)
                #expect(followed < .seconds(1), "the textfile followed after \(followed)")
                #expect(await eventually(.seconds(30)) { prometheus.query("reachd_path_up") == 0 })
                #expect(prometheus.query("reachd_path_status{status=\"unreachable\"}") == 1)
                #expect(prometheus.query("up") == 1)
                #expect(try FileManager.default.contentsOfDirectory(atPath: textfiles.path) == ["reachd.prom"])
            }
        }
    }

    /// A Prometheus server on a free loopback port, scraping reachd's listener on `port` every second.
    struct Prometheus {
        let process: Process
        let port: Int

        /// The one value of an instant query, or nil.
        func query(_ expression: String) -> Double? {
            guard
                let answer = try? run(
                    [
                        "curl", "-sS", "--max-time", "5", "--get", "--data-urlencode", "query=\(expression)",
                        "http://127.0.0.1:\(port)/api/v1/query"
                    ], check: false
                ).output,
                let document = try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any],
                let data = document["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
                result.count == 1, let value = result[0]["value"] as? [Any], value.count == 2, let text = value[1] as? String
            else { return nil }
            return Double(text)
        }
    }

    static func startPrometheus(scraping port: Int, directory: URL) throws -> Prometheus {
        let config = directory.appendingPathComponent("prometheus.yml")
        try """
        global:
          scrape_interval: 1s
          scrape_timeout: 1s
        scrape_configs:
          - job_name: reachd
            static_configs:
              - targets: ["127.0.0.1:\(port)"]
        """.write(to: config, atomically: true, encoding: .utf8)
        let listen = try PinnedServer.freeLoopbackPort()
        let prometheus = Process()
        prometheus.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        prometheus.arguments = [
            "prometheus", "--config.file=\(config.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("tsdb").path)",
            "--web.listen-address=127.0.0.1:\(listen)"
        ]
        prometheus.standardOutput = FileHandle.nullDevice
        prometheus.standardError = try FileHandle(
            forWritingTo: {
                let log = directory.appendingPathComponent("prometheus.log")
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
                return log
            }())
        try prometheus.run()
        return Prometheus(process: prometheus, port: listen)
    }

    @Test("a client that sends nothing, sends 1 MB, or holds every connection is dropped; scrapes go on")
    func hostileScrapers() async throws {
        let port = try PinnedServer.freeLoopbackPort()
        let config = "[metrics]\nlisten = \"127.0.0.1:\(port)\"\n"
        try await ServedDaemon.serving(config: config, { $0.addUplink(subnet: "10.1.0") }) { daemon in
            // Twenty idle connections (more than the eight served at once), one that sends
            // 1 MB of header, and, meanwhile, ordinary scrapes; then when each was closed.
            let script = """
                import socket, subprocess, sys, time
                def connect():
                    s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.settimeout(20); return s
                idle = [connect() for _ in range(20)]
                big = connect()
                start = time.monotonic()
                try:
                    big.sendall(b"GET /metrics HTTP/1.1\\r\\nX-Padding: " + b"x" * (1 << 20))
                    print("big-sent-all")
                except OSError as error:
                    print("big-refused", type(error).__name__)
                try:
                    answer = big.recv(100)
                    print("big-answer", answer.split(b"\\r\\n")[0].decode() if answer else "closed")
                except OSError as error:
                    print("big-answer", type(error).__name__)
                for _ in range(3):
                    scrape = subprocess.run(["curl", "-sS", "--max-time", "5", "http://127.0.0.1:%s/metrics" % sys.argv[1]], capture_output=True, text=True)
                    print("scrape", "reachd_path_up" in scrape.stdout)
                closed = 0
                for s in idle:
                    try:
                        closed += s.recv(1) == b""
                    except OSError:
                        closed += 1
                print("idle-closed", closed, round(time.monotonic() - start))
                """
            let result = try run(["python3", "-c", script, String(port)])
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(
                lines.contains { $0.hasPrefix("big-answer") && ($0.contains("431") || $0.contains("closed") || $0.contains("Reset")) },
                "\(result.output)")
            #expect(lines.filter { $0 == "scrape True" }.count == 3, "\(result.output)\n\(daemon.log)")
            let idle = lines.first { $0.hasPrefix("idle-closed") }?.split(separator: " ") ?? []
            #expect(idle.count == 3 && idle[1] == "20", "every idle connection closed: \(result.output)")
            #expect(idle.count == 3 && (Int(idle[2]) ?? 99) <= 12, "within the 10 s exchange deadline: \(result.output)")
            #expect(daemon.log.components(separatedBy: "metrics: closed a connection").count == 2, "one log line: \(daemon.log)")
            #expect(metricValue("reachd_path_up", in: scrapeMetrics(port: port)) != nil)
        }
    }
}
