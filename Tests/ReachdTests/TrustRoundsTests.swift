import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import ReachabilityClient
import SystemCalls
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's trust rounds as they run: reachd (`ServedDaemon`, as any user) with the
/// built reachd-trust, against pinned.test served by `openssl s_server` on loopback. What
/// needs a system bus, other users or a router stays in TrustWiringTests.
@Suite("reachd's trust rounds (embedded kernel, reachd-trust against loopback)", .ownThreads)
struct TrustRoundsTests {
    static let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]
    static let defaultRoute = EmbeddedKernel.Route.defaultRoute(via: IPAddress("10.1.0.1")!, interface: EmbeddedKernel.uplink)

    /// The `Trust` and `Status` properties, as busctl prints them.
    static func trust(_ daemon: ServedDaemon) -> String { (try? daemon.busctl(["get-property"] + object + ["Trust"]).output) ?? "" }
    static func status(_ daemon: ServedDaemon) -> String { (try? daemon.busctl(["get-property"] + object + ["Status"]).output) ?? "" }

    /// pinned.test served on loopback with its PKI in `scratch`; its config (`pins`: its own
    /// keys unless given, a 1 s timeout, `extra` appended), the anchors named by absolute path.
    static func pinnedConfig(in scratch: URL, port: Int, pins: [String]? = nil, extra: String = "") throws -> String {
        let file = try PinnedServer.config(pins: try pins ?? PinnedServer.pins(in: scratch), in: scratch, connect: "127.0.0.1", port: port)
        return try String(contentsOf: file, encoding: .utf8)
            .replacingOccurrences(of: "timeout = \"2s\"", with: "timeout = \"1s\"")
            .replacingOccurrences(of: "anchors = [\"ca.pem\"]", with: "anchors = [\"\(scratch.appendingPathComponent("ca.pem").path)\"]")
            + extra
    }

    /// The daemon with a wired uplink and pinned.test's config, `body` once trust is `ok`.
    static func withTrustedDaemon(extra: String = "", _ body: (ServedDaemon, Process) async throws -> Void) async throws {
        try await withScratch { scratch in
            try PinnedServer.makePKI(in: scratch)
            let (server, port) = try await PinnedServer.serveOnLoopback(from: scratch)
            defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            let config = try pinnedConfig(in: scratch, port: port, extra: extra)
            try await ServedDaemon.serving(config: config, trustHelper: true, { $0.addUplink(subnet: "10.1.0") }) { daemon in
                #expect(await eventually(.seconds(20)) { trust(daemon) == "s \"ok\"\n" }, "\(daemon.log)")
                try await body(daemon, server)
            }
        }
    }

    /// Occurrences of `text` in the daemon's log.
    static func count(_ text: String, in daemon: ServedDaemon) -> Int { daemon.log.components(separatedBy: text).count - 1 }

    @Test("a pin set with no backup key is warned about once per config loaded, not every round")
    func backupPinWarningOnce() async throws {
        try await Self.withTrustedDaemon { daemon, _ in
            let warning = "every pin is a key of the current chain"
            #expect(Self.count("trust: ok", in: daemon) == 1, "\(daemon.log)")
            // Two more rounds, on two path changes (each waits for its round: rounds start 2 s apart at least).
            for round in 2...3 {
                // Each change seen before the next: else both can fall in one batch, which changes no path.
                daemon.kernel.deleteRoute(Self.defaultRoute)
                #expect(await eventually(.seconds(10)) { Self.status(daemon) == "s \"unreachable\"\n" }, "\(daemon.log)")
                daemon.kernel.addRoute(Self.defaultRoute)
                #expect(await eventually(.seconds(10)) { Self.status(daemon) == "s \"wired\"\n" }, "\(daemon.log)")
                #expect(await eventually(.seconds(20)) { Self.count("trust: checking", in: daemon) >= round }, "\(daemon.log)")
            }
            try await Task.sleep(for: .seconds(1)) // the last round (a local handshake) ends
            #expect(Self.count(warning, in: daemon) == 1, "\(daemon.log)")
            // A reload is a new config: said once more.
            #expect((try? await daemon.reload().get()) != nil, "\(daemon.log)")
            #expect(await eventually(.seconds(20)) { Self.count(warning, in: daemon) == 2 }, "\(daemon.log)")
        }
    }

    @Test("a round that gives no result does not leave the last verdict standing: trust turns unknown")
    func failedRoundForgetsVerdict() async throws {
        try await Self.withTrustedDaemon { daemon, _ in
            // The file changes under the daemon (not reloaded): reachd-trust can no
            // longer read it, and the next round, on a path change, has no result.
            try "[trust\n".write(toFile: daemon.configFile, atomically: true, encoding: .utf8)
            daemon.kernel.deleteRoute(Self.defaultRoute)
            #expect(await eventually { Self.status(daemon) == "s \"unreachable\"\n" }, "\(daemon.log)")
            daemon.kernel.addRoute(Self.defaultRoute)
            #expect(await eventually(.seconds(20)) { Self.trust(daemon) == "s \"unknown\"\n" }, "\(daemon.log)")
            #expect(daemon.log.contains("the verdict is unknown until a round completes"))
        }
    }

    @Test(
        "a helper stopped mid-round (SIGSTOP) is killed at the round's deadline: every host unknown with the reason, logged and counted; the next round runs normally",
        .timeLimit(.minutes(3)))
    func stoppedHelperKilled() async throws {
        try await Self.withTrustedDaemon { daemon, server in
            // The server stops answering, so the next round's helper lives a while; it is stopped mid-round.
            // One round, asked for by RecheckTrust (the daemon's own user is served at once): none waits behind it.
            kill(server.processIdentifier, SIGSTOP)
            try await Task.sleep(for: .seconds(2)) // the rounds' spacing
            try daemon.busctl(["call"] + Self.object + ["RecheckTrust"])
            // This daemon's round: reachd-trust check with its config (other tests' helpers are this process's children too).
            var helper: pid_t = 0
            #expect(
                try await eventually(.seconds(10)) {
                    helper = pid_t(
                        try run(["pgrep", "-f", "reachd-trust check \(daemon.configFile)"], check: false).output
                            .split(separator: "\n").first.flatMap { Int32($0) } ?? 0)
                    return helper > 0
                }, "\(daemon.log)")
            kill(helper, SIGSTOP)
            let stopped = ContinuousClock.now
            // 1 host × 3 phases × 1 s, a delivery pass of 1 s, and the 10 s margin.
            let client = ReachabilityClient(endpoint: .address(daemon.address))
            var unjudged: TrustStatus?
            #expect(
                await eventually(.seconds(30)) {
                    guard let status = try? await client.trustStatus(), status.overall == .unknown else { return false }
                    unjudged = status
                    return true
                }, "\(daemon.log)")
            print("stopped helper: trust unknown \(stopped.duration(to: .now)) after the stop")
            #expect(
                kill(helper, 0) != 0 || (try? String(contentsOfFile: "/proc/\(helper)/stat", encoding: .utf8))?.contains(") Z") == true,
                "the helper was killed")
            #expect(
                daemon.log.contains(
                    "reachd-trust check did not finish within 14.0 seconds (killed); every host is unknown until a round completes"),
                "\(daemon.log)")
            let status = try #require(unjudged)
            #expect(status.hosts.map(\.verdict) == [.unknown], "\(status)")
            #expect(status.hosts.first?.reason.hasPrefix("not judged: reachd-trust check did not finish") == true)
            #expect(status.hosts.first?.host == "pinned.test")
            #expect(await daemon.metric("reachd_trust_rounds_killed_total") == 1)
            #expect(await daemon.metric("reachd_trust_verdict", ["host": "pinned.test", "verdict": "unknown"]) == 1)

            // The next round runs as any other.
            kill(server.processIdentifier, SIGCONT)
            try await Task.sleep(for: .seconds(2)) // the rounds' spacing
            try daemon.busctl(["call"] + Self.object + ["RecheckTrust"])
            #expect(await eventually(.seconds(20)) { Self.trust(daemon) == "s \"ok\"\n" }, "\(daemon.log)")
        }
    }

    /// 400 hosts with trust evaluation disabled: check-config writes about 100 KB of
    /// warnings to stderr, more than a pipe holds, before its answer on stdout — read on
    /// the loop, both pipes at once: a helper that filled one while reachd waited on the
    /// other would hang the daemon for good (at start: never ready; on a reload: the
    /// watchdog kills it).
    static func disabledHosts(reports: URL) -> String {
        var text = "[trust]\ntimeout = \"1s\"\nreports = \"\(reports.path)\"\n"
        for host in 0..<400 {
            // Dialled on loopback only: port 9 refuses at once.
            text += "\n[[trust.host]]\nmatch = \"h\(host).disabled.test\"\nport = 9\nconnect = \"127.0.0.1\"\nmode = \"disabled\"\n"
        }
        return text
    }

    @Test(
        "400 disabled hosts: reachd starts, answers, says so once per load (the count and the first names), and reloads",
        .timeLimit(.minutes(2)))
    func manyWarnings() async throws {
        try await withScratch { scratch in
            let config = Self.disabledHosts(reports: scratch.appendingPathComponent("reports"))
            try await ServedDaemon.serving(config: config, trustHelper: true, { $0.addUplink(subnet: "10.1.0") }) { daemon in
                #expect(Self.count("trust evaluation is DISABLED", in: daemon) == 1, "\(daemon.log.suffix(500))")
                #expect(
                    daemon.log.contains(
                        "trust evaluation is DISABLED for 400 entries: h0.disabled.test, h1.disabled.test, h2.disabled.test and 397 more: any certificate is accepted"
                    ),
                    "\(daemon.log.suffix(500))")
                #expect((try? await daemon.reload().get()) != nil, "\(daemon.log.suffix(500))")
                #expect(daemon.log.contains("reloaded \(daemon.configFile)"), "\(daemon.log.suffix(500))")
                #expect(Self.count("trust evaluation is DISABLED", in: daemon) == 2, "once more for the reload")
                let client = ReachabilityClient(endpoint: .address(daemon.address))
                #expect(await (try? client.currentPath()) != nil, "the daemon still answers")
            }
        }
    }

    @Test(
        "a config or an anchors path that is a FIFO nobody writes to: refused at start at once, refused by a reload while the daemon answers",
        .timeLimit(.minutes(2)))
    func fifoPaths() async throws {
        try await withScratch { scratch in
            let fifo = scratch.appendingPathComponent("reachd.fifo").path
            #expect(mkfifo(fifo, 0o644) == 0)
            // The binary: refused before it opens anything.
            let started = ContinuousClock.now
            let refused = try run(
                [DaemonProcess.binary, "--bus", "none", "--socket", scratch.appendingPathComponent("bus").path, "--config", fifo],
                check: false)
            #expect(refused.status == 1 && refused.error.contains("\(fifo): cannot read it: it is a FIFO, not a file"), "\(refused)")
            // A writer never comes, so waiting for one would end only at the time limit. The
            // bound is far from both: a loaded machine once took 10.9 s to start the debug
            // binary and be refused.
            #expect(started.duration(to: .now) < .seconds(60), "it did not wait for a writer")

            // A [trust] anchors path that is a FIFO, on a reload: refused, and the daemon answers throughout.
            try await ServedDaemon.serving(trustHelper: true, { $0.addUplink(subnet: "10.1.0") }) { daemon in
                try ServedDaemon.isolated(
                    """
                    [trust]
                    reports = "\(scratch.appendingPathComponent("reports").path)"
                    [[trust.host]]
                    match = "pinned.test"
                    mode = "public-key"
                    pins = ["sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", "sha256/AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="]
                    anchors = ["\(fifo)"]
                    """
                ).write(toFile: daemon.configFile, atomically: true, encoding: .utf8)
                let reload = ContinuousClock.now
                #expect((try? await daemon.reload().get()) == nil, "refused")
                #expect(reload.duration(to: .now) < .seconds(60), "it did not wait for a writer")
                #expect(daemon.log.contains("it is a FIFO"), "\(daemon.log.suffix(800))")
                let client = ReachabilityClient(endpoint: .address(daemon.address))
                #expect(await (try? client.currentPath()) != nil, "the daemon still answers")
            }
        }
    }
}
