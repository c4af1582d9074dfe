import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Connectivity (docs/connectivity.md): reachd's HTTP probe against a real HTTP server in the
/// gateway's namespace, and trust judged knowing whether a captive portal is there.
@Suite("reachd's connectivity probe", .serialized, .needsNamespaces, .ownThreads)
struct ConnectivityTests {
    static func path(_ daemon: DaemonProcess) -> Path? {
        try? ReachabilityClient(endpoint: .address(daemon.address)).blocking.currentPath()
    }

    static func connectivity(uri: String, interval: String = "5m", timeout: String = "1s") -> String {
        "\n[connectivity]\nuri = \"\(uri)\"\ninterval = \"\(interval)\"\ntimeout = \"\(timeout)\"\n"
    }

    /// A certificate for pinned.test from a CA the pins do not cover: what a portal intercepting TLS presents.
    static func makePortalCertificate(in directory: URL) throws {
        try run([
            "/bin/sh", "-c",
            """
            cd '\(directory.path)' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout portal.key \
              -out portal.pem -days 5 -subj /CN=pinned.test -addext subjectAltName=DNS:pinned.test 2>/dev/null
            """
        ])
    }

    static func spooledReports(_ directory: URL) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("reports").path)) ?? [])
            .filter { $0.hasSuffix(".json") }.count
    }

    static func spooled(_ directory: URL) -> [[String: Any]] {
        let reports = directory.appendingPathComponent("reports")
        return ((try? FileManager.default.contentsOfDirectory(atPath: reports.path)) ?? []).filter { $0.hasSuffix(".json") }.compactMap {
            (try? Data(contentsOf: reports.appendingPathComponent($0))).flatMap {
                try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
            }
        }
    }

    @Test(
        "an interceptor posing as a captive portal: connectivity portal, the pinned host judged portal, yet the failure spooled with the probe's evidence, counted apart and signalled; once the probe answers, the same interception is compromised with a report of its own; the reports go to the collector only once the path is full and trusted",
        .timeLimit(.minutes(3)), .needsRoot("CheckConnectivity more than once in 10 s, which only root may"))
    func portalThenFull() async throws {
        try await withScratch { scratch in
            try PinnedServer.makePKI(in: scratch)
            try Self.makePortalCertificate(in: scratch)
            let config = try PinnedServer.config(pins: try PinnedServer.pins(in: scratch), in: scratch)
            try
                (String(contentsOf: config, encoding: .utf8).replacingOccurrences(
                    of: "[trust]\n", with: "[trust]\nallow-http-report-uri = true\n")
                + "\nreport-uri = [\"http://10.1.0.1:8080/pins\"]\n"
                + Self.connectivity(uri: "http://10.1.0.1/generate_204") + "\n[metrics]\nlisten = \"127.0.0.1:9748\"\n")
                .write(to: config, atomically: true, encoding: .utf8)
            let script = scratch.appendingPathComponent("collector.py")
            try TrustWiringTests.collector.write(to: script, atomically: true, encoding: .utf8)
            let received = scratch.appendingPathComponent("received.jsonl")
            func delivered() -> [String] {
                ((try? String(contentsOf: received, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            }
            try await withNamespaces("rdportal", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let http = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "redirect")
                defer { http.stop() }
                var tls = try await PinnedServer.serve(in: ns[1], from: scratch, certificate: "portal")
                defer { kill(tls.processIdentifier, SIGKILL); tls.waitUntilExit() }
                let collector = Process()
                collector.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                collector.arguments = [
                    "ip", "netns", "exec", ns[1].name, "/usr/bin/python3", script.path, "10.1.0.1", "8080", received.path
                ]
                collector.standardError = FileHandle.nullDevice
                try collector.run()
                defer { kill(collector.processIdentifier, SIGKILL); collector.waitUntilExit() }
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()

                #expect(await eventually(.seconds(20)) { Self.path(daemon)?.trust == .portal }, "\(daemon.log)")
                let portal = try #require(Self.path(daemon))
                #expect(portal.connectivity == .portal)
                #expect(portal.portal == "http://10.1.0.1/login?from=probe")
                let status = try ns[0].exec([DaemonProcess.reachctl, "trust", "status", "--json", "--bus", daemon.socket]).output
                #expect(status.contains(#""verdict":"portal""#) && status.contains(#""trust":"portal""#), "\(status)")
                let typed = try await ReachabilityClient(endpoint: .address(daemon.address)).trustStatus()
                #expect(typed.overall == .portal && typed.hosts.map(\.verdict) == [.portal] && typed.reportsPending == 1)
                #expect(typed.hosts.first?.reason.contains("while connectivity is portal") == true)
                // Recorded, with the evidence: nobody can tell this portal from an interceptor posing as one.
                #expect(await eventually { Self.spooled(scratch).count == 1 }, "\(daemon.log)")
                let evidence = Self.spooled(scratch).first?["captive-portal"] as? [String: Any]
                #expect(
                    evidence?["http-status"] as? Int == 302 && evidence?["location"] as? String == "http://10.1.0.1/login?from=probe",
                    "\(Self.spooled(scratch))")
                #expect((Self.spooled(scratch).first?["path"] as? [String: String])?["connectivity"] == "portal")
                #expect(
                    daemon.log.contains("report-uri http://10.1.0.1:8080/pins is plain HTTP (allow-http-report-uri = true)"),
                    "warned at start")
                #expect(
                    daemon.log.contains(
                        "pin failure for pinned.test behind a captive portal (the probe got 302 to http://10.1.0.1/login?from=probe)"),
                    "\(daemon.log)")
                let during = ns[0].scrapeMetrics()
                #expect(metricValue("reachd_pin_failures_total{host=\"pinned.test\"}", in: during) == 0, "not an alarm:\n\(during)")
                #expect(metricValue("reachd_pin_failures_behind_portal_total{host=\"pinned.test\"}", in: during) == 1, "\(during)")
                #expect(metricValue("reachd_connectivity{state=\"portal\"}", in: during) == 1)
                #expect(delivered().isEmpty, "never sent over the path that failed it")
                let property = try daemon.busctl([
                    "get-property", "io.reachd.Reachability1", "/io/reachd/Reachability1",
                    "io.reachd.Reachability1", "PortalURL"
                ]).output
                #expect(property.contains("http://10.1.0.1/login?from=probe"), "\(property)")
                let human = try ns[0].exec([DaemonProcess.reachctl, "status", "--bus", daemon.socket]).output
                #expect(
                    human.contains("connectivity: portal") && human.contains("portal:       http://10.1.0.1/login?from=probe"), "\(human)")
                let blocked = try ns[0].exec(
                    [DaemonProcess.reachctl, "wait", "--for", "online", "--timeout", "1s", "--bus", daemon.socket], check: false)
                #expect(blocked.status == 1, "\(blocked)")

                // The guest logged in: the probe answers 204. The path moves (the link
                // bounces), connectivity is full, and the interception is an attack.
                try http.set("204")
                let waiter = Process()
                waiter.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                waiter.arguments = [
                    "ip", "netns", "exec", ns[0].name, DaemonProcess.reachctl, "wait", "--for", "online",
                    "--timeout", "30s", "--bus", daemon.socket
                ]
                waiter.standardOutput = FileHandle.nullDevice
                try waiter.run()
                try await Task.sleep(for: .milliseconds(300))
                func bounce() throws {
                    try ns[0].ip("link set dev eth0 down")
                    try ns[0].ip("link set dev eth0 up")
                    try ns[0].ip("route replace default via 10.1.0.1 dev eth0")
                }
                try ns[0].ip("link set dev eth0 down")
                #expect(await eventually { Self.path(daemon)?.connectivity == Connectivity.none })
                try ns[0].ip("link set dev eth0 up")
                try ns[0].ip("route replace default via 10.1.0.1 dev eth0")
                #expect(await eventually(.seconds(20)) { Self.path(daemon)?.trust == .compromised }, "\(daemon.log)")
                waiter.waitUntilExit()
                #expect(waiter.terminationStatus == 0)
                #expect(Self.path(daemon)?.connectivity == .full)
                #expect(Self.path(daemon)?.portal == nil)
                #expect(
                    await eventually { Self.spooled(scratch).count == 2 },
                    "a report of its own, not held back by the portal's:\n\(daemon.log)")
                #expect(Self.spooled(scratch).filter { $0["captive-portal"] == nil }.count == 1)
                #expect(daemon.log.contains("pin failure for pinned.test: chain-invalid (report spooled)"), "\(daemon.log)")
                #expect(metricValue("reachd_pin_failures_total{host=\"pinned.test\"}", in: ns[0].scrapeMetrics()) ?? 0 >= 1)
                #expect(delivered().isEmpty, "the path that failed them is full, but not trusted")

                let client = ReachabilityClient(endpoint: .address(daemon.address))
                // The portal's certificate is from no configured anchor: the chain fails before the pins are compared.
                #expect(try await client.trustStatus().hosts.first?.verdict == .chainInvalid)
                // CheckConnectivity probes now: root always; another user once per 10 s.
                #expect(try await client.checkConnectivity() == .full)
                #expect(try await client.checkConnectivity() == .full)
                let nobody = [
                    "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "busctl", "--address=\(daemon.address)", "call",
                    "io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1", "CheckConnectivity"
                ]
                #expect(try run(nobody).output == "s \"full\"\n")
                let limited = try run(nobody, check: false)
                #expect(limited.status != 0 && limited.error.contains("rate-limited to once per 10 s for each user"), "\(limited)")

                // The interceptor is gone: the genuine server answers, trust is ok, and both reports go.
                kill(tls.processIdentifier, SIGKILL)
                tls.waitUntilExit()
                tls = try await PinnedServer.serve(in: ns[1], from: scratch)
                try await Task.sleep(for: .seconds(2)) // the rounds' spacing
                try bounce()
                #expect(await eventually(.seconds(30)) { Self.path(daemon)?.trust == .ok && delivered().count == 2 }, "\(daemon.log)")
                #expect(delivered().filter { $0.contains("\"captive-portal\"") }.count == 1, "\(delivered())")
                #expect(await eventually { (try? client.blocking.trustStatus().reportsPending) == 0 }, "the delivery pass ended")
            }
        }
    }

    @Test(
        "limited when the probe is refused or times out, none without a path; unknown with no probe and no trust host, and nothing sent",
        .timeLimit(.minutes(3)))
    func limitedNoneUnknown() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdlimited", "router") { ns in
                // No IPv6: its router solicitations would be packets the daemon did not send.
                try ns[0].sysctl("net.ipv6.conf.all.disable_ipv6=1")
                try ns[0].sysctl("net.ipv6.conf.default.disable_ipv6=1")
                try ns[0].addUplink(router: ns[1])

                let silent = try DaemonProcess(in: ns[0], directory: scratch.appendingPathComponent("silent"), arguments: ["--bus", "none"])
                try await silent.waitUntilServing()
                #expect(await eventually { Self.path(silent)?.status == .wired })
                let before = try ns[0].exec(["cat", "/sys/class/net/eth0/statistics/tx_packets"]).output
                try await Task.sleep(for: .seconds(3))
                #expect(Self.path(silent)?.connectivity == .unknown)
                #expect(
                    try ns[0].exec(["cat", "/sys/class/net/eth0/statistics/tx_packets"]).output == before,
                    "reachd sent packets nobody configured")
                await silent.stop()

                let config = scratch.appendingPathComponent("reachd.toml")
                try Self.connectivity(uri: "http://10.1.0.1/generate_204").write(to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                // Nothing listens on port 80: refused.
                #expect(await eventually { Self.path(daemon)?.connectivity == .limited }, "\(daemon.log)")
                #expect(daemon.log.contains("Connection refused"), "\(daemon.log)")

                // A server that never answers: the timeout.
                let http = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "silent")
                defer { http.stop() }
                try ns[0].ip("route del default")
                #expect(await eventually { Self.path(daemon)?.connectivity == Connectivity.none })
                try ns[0].ip("route add default via 10.1.0.1 dev eth0")
                #expect(await eventually { daemon.log.contains("timed out") }, "\(daemon.log)")
                #expect(Self.path(daemon)?.connectivity == .limited)
                #expect(http.requests >= 1)
            }
        }
    }

    @Test(
        "dual stack: the best family's answer (IPv6 answers, IPv4 refused); IPv6 only; a stable path probes once per interval",
        .timeLimit(.minutes(3)))
    func dualStackAndPolling() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rddual", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                try ns[1].ip("addr add fd00:1::1/64 dev up0 nodad")
                try ns[0].ip("addr add fd00:1::2/64 dev eth0 nodad")
                try ns[0].ip("route add default via fd00:1::1 dev eth0")
                // ip netns exec bind-mounts /etc/netns/NAME/hosts over /etc/hosts: the probe's name has both families.
                let hosts = URL(fileURLWithPath: "/etc/netns/\(ns[0].name)")
                try FileManager.default.createDirectory(at: hosts, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: hosts) }
                try "127.0.0.1 localhost\n10.1.0.1 probe.test\nfd00:1::1 probe.test\n"
                    .write(to: hosts.appendingPathComponent("hosts"), atomically: true, encoding: .utf8)
                let http = try await HTTPProbeServer(in: ns[1], address: "fd00:1::1", directory: scratch, mode: "204")
                defer { http.stop() }

                let config = scratch.appendingPathComponent("reachd.toml")
                try Self.connectivity(uri: "http://probe.test/generate_204", interval: "10s").write(
                    to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await eventually { Self.path(daemon)?.connectivity == .full }, "\(daemon.log)")
                let dual = try #require(Self.path(daemon))
                #expect(dual.ipv4 && dual.ipv6)
                #expect(
                    daemon.log.contains("ipv4 connecting to 10.1.0.1:80: Connection refused") && daemon.log.contains("ipv6 204"),
                    "\(daemon.log)")

                // A stable path: one probe per interval (10 s), nothing in between.
                let start = http.requests
                try await Task.sleep(for: .seconds(21))
                let polled = http.requests - start
                #expect((1...3).contains(polled), "\(polled) probes in 21 s with interval 10s")

                // IPv6 only.
                try ns[0].ip("route del default via 10.1.0.1")
                #expect(await eventually { Self.path(daemon).map { !$0.ipv4 && $0.ipv6 } == true })
                #expect(await eventually { Self.path(daemon)?.connectivity == .full }, "\(daemon.log)")
            }
        }
    }
}
