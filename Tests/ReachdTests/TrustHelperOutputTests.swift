import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// reachd-trust's output is read on the loop, its stdout and its stderr at once:
/// a helper that fills one pipe while reachd waits on the other would hang the
/// daemon for good (at start: never ready; on reload: the watchdog kills it).
@Suite("reachd-trust's output: both pipes at once, never waited for on the loop", .needsRoot, .ownThreads)
struct TrustHelperOutputTests {
    /// 400 hosts with trust evaluation disabled: check-config writes about 100 KB of
    /// warnings to stderr, more than a pipe holds, before its answer on stdout.
    static func config(in directory: URL) throws -> URL {
        var text = "[trust]\ntimeout = \"1s\"\nreports = \"\(directory.appendingPathComponent("reports").path)\"\n"
        for host in 0..<400 {
            // Dialled on the namespace's loopback only: port 9 refuses at once.
            text += "\n[[trust.host]]\nmatch = \"h\(host).disabled.test\"\nport = 9\nconnect = \"127.0.0.1\"\nmode = \"disabled\"\n"
        }
        let file = directory.appendingPathComponent("reachd.toml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test(
        "400 disabled hosts: reachd starts, answers, says so once per load (the count and the first names), and reloads",
        .timeLimit(.minutes(2)))
    func manyWarnings() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdwarn") { ns in
                let config = try Self.config(in: scratch)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing(timeout: .seconds(60))
                #expect(daemon.log.components(separatedBy: "trust evaluation is DISABLED").count - 1 == 1, "\(daemon.log.suffix(500))")
                #expect(
                    daemon.log.contains(
                        "trust evaluation is DISABLED for 400 entries: h0.disabled.test, h1.disabled.test, h2.disabled.test and 397 more: any certificate is accepted"
                    ),
                    "\(daemon.log.suffix(500))")
                let client = ReachabilityClient(endpoint: .address(daemon.address))
                try await client.reload()
                #expect(await eventually { daemon.log.contains("reloaded \(config.path)") }, "\(daemon.log.suffix(500))")
                #expect(daemon.log.components(separatedBy: "trust evaluation is DISABLED").count - 1 == 2, "once more for the reload")
                #expect(await (try? client.currentPath()) != nil, "the daemon still answers")
            }
        }
    }

    @Test(
        "a config or an anchors path that is a FIFO nobody writes to: refused at start at once, refused by a reload while the daemon answers",
        .timeLimit(.minutes(2)))
    func fifoPaths() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdfifo") { ns in
                let fifo = scratch.appendingPathComponent("reachd.fifo").path
                #expect(mkfifo(fifo, 0o644) == 0)
                let started = ContinuousClock.now
                let refused = try ns[0].exec(
                    [
                        DaemonProcess.binary, "--bus", "none", "--socket", scratch.appendingPathComponent("bus").path,
                        "--config", fifo
                    ], check: false)
                #expect(refused.status == 1 && refused.error.contains("\(fifo): cannot read it: it is a FIFO, not a file"), "\(refused)")
                #expect(started.duration(to: .now) < .seconds(10), "it did not wait for a writer")

                // A [trust] anchors path that is a FIFO, on a reload: refused, and the daemon answers throughout.
                let config = scratch.appendingPathComponent("reachd.toml")
                try "".write(to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                try """
                [trust]
                reports = "\(scratch.appendingPathComponent("reports").path)"
                [[trust.host]]
                match = "pinned.test"
                mode = "public-key"
                pins = ["sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", "sha256/AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="]
                anchors = ["\(fifo)"]
                """.write(to: config, atomically: true, encoding: .utf8)
                let client = ReachabilityClient(endpoint: .address(daemon.address))
                #expect(throws: ReachabilityClient.Failure.self) { try client.blocking.reload() }
                #expect(daemon.log.contains("it is a FIFO"), "\(daemon.log.suffix(800))")
                #expect(await (try? client.currentPath()) != nil, "the daemon still answers")
            }
        }
    }
}
