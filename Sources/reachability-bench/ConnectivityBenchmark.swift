import Foundation
import NamespaceTesting
import ReachabilityCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Connectivity: the time from the path becoming usable to `connectivity: full`
/// published (both seen by one `reachctl watch`, so its own delay cancels out),
/// beside the probe's bare HTTP round trip measured by curl against the same
/// server in the same run; the probes a stable path gets; reachd's idle memory
/// without and with the probe; and the same latency for the library's in-process
/// probe (`ReachabilityMonitor(connectivity:)`, timed in its `onChange`).
struct ConnectivityBenchmark {
    let reachd: String
    let reachctl: String
    let repetitions: Int
    let stableSeconds: Int
    static let interval = 10

    struct Result {
        var published: [Double] = []
        var library: [Double] = []
        var curl: [Double] = []
        var stableProbes = 0
        var rssWithoutKiB = 0, rssWithKiB = 0
    }

    /// Answers 204 on 10.1.0.1:80 and appends a line per request to argv[1].
    static let server = """
        import http.server, sys
        class Probe(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                with open(sys.argv[1], "a") as log: log.write("x\\n")
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *arguments): pass
        http.server.ThreadingHTTPServer(("10.1.0.1", 80), Probe).serve_forever()
        """

    func run() throws -> Result {
        let site = try BenchSite("con")
        let (host, router, scratch) = (site.host, site.router, site.scratch)
        let requests = scratch.appendingPathComponent("requests")
        _ = FileManager.default.createFile(atPath: requests.path, contents: nil)
        let server = try BackgroundProcess(["ip", "netns", "exec", router.name, "python3", "-c", Self.server, requests.path])
        defer { server.stop() }
        let deadline = Date().addingTimeInterval(10)
        while (try? host.exec(["curl", "-s", "-o", "/dev/null", "http://10.1.0.1/"], check: false).status) != 0 {
            guard Date() < deadline else { throw BenchmarkError("the probe server did not start") }
            usleep(100_000)
        }
        func requestCount() -> Int { ((try? String(contentsOf: requests, encoding: .utf8)) ?? "").split(separator: "\n").count }

        var result = Result()
        let empty = scratch.appendingPathComponent("empty.toml")
        try "".write(to: empty, atomically: true, encoding: .utf8)
        let config = scratch.appendingPathComponent("reachd.toml")
        try "[connectivity]\nuri = \"http://10.1.0.1/generate_204\"\ninterval = \"\(Self.interval)s\"\ntimeout = \"2s\"\n"
            .write(to: config, atomically: true, encoding: .utf8)
        let socket = scratch.appendingPathComponent("bus").path

        try measureDaemon(host: host, config: config, empty: empty, socket: socket, requestCount: requestCount, into: &result)
        try measureLibrary(host: host, into: &result)
        return result
    }

    private func measureDaemon(
        host: TestNamespace, config: URL, empty: URL, socket: String, requestCount: () -> Int,
        into result: inout Result
    ) throws {
        // Idle memory: the same binary without and with the probe (after it answered);
        // the second daemon stays for the rest.
        var daemon: BackgroundProcess!, watch: BackgroundProcess!
        for (file, probing) in [(empty, false), (config, true)] {
            daemon?.stop()
            watch?.stop()
            daemon = try BackgroundProcess([
                "ip", "netns", "exec", host.name, reachd, "--bus", "none", "--socket", socket,
                "--config", file.path, "--log-level", "warning"
            ])
            try waitForDaemon(in: host, socket: socket)
            watch = try BackgroundProcess(["ip", "netns", "exec", host.name, reachctl, "watch", "--json", "--bus", socket])
            _ = try waitFor(watch, after: 0) { $0.contains(probing ? #""connectivity":"full""# : #""status":"wired""#) }
            sleep(3)
            if probing { result.rssWithKiB = residentKiB(of: daemon.pid) } else { result.rssWithoutKiB = residentKiB(of: daemon.pid) }
        }
        defer { watch.stop(); daemon.stop() }

        for _ in 0..<repetitions {
            let down = watch.lines.count
            try host.ip("link set dev eth0 down")
            _ = try waitFor(watch, after: down) { $0.contains(#""connectivity":"none""#) }
            let mark = watch.lines.count
            try host.ip("link set dev eth0 up")
            try host.ip("route replace default via 10.1.0.1 dev eth0")
            let usable = try waitFor(watch, after: mark) { $0.contains(#""status":"wired""#) }
            let full = try waitFor(watch, after: mark) { $0.contains(#""connectivity":"full""#) }
            result.published.append(milliseconds(full.time - usable.time))
            let curl = try host.exec(["curl", "-s", "-o", "/dev/null", "-w", "%{time_total}", "http://10.1.0.1/generate_204"]).output
            result.curl.append((Double(curl) ?? .nan) * 1000)
        }

        // A stable path: nothing changes; count what reaches the server.
        sleep(1)
        let before = requestCount()
        sleep(UInt32(stableSeconds))
        result.stableProbes = requestCount() - before
    }

    /// The library's probe, with reachd stopped: the same bounces, seen by `onChange`.
    private func measureLibrary(host: TestNamespace, into result: inout Result) throws {
        let seen = Mutex<[(time: UInt64, path: Path)]>([])
        let monitor = ReachabilityMonitor(
            options: try MonitorOptions(networkNamespace: host.path),
            connectivity: ConnectivityOptions(
                uri: .init("http://10.1.0.1/generate_204"),
                interval: .seconds(Int64(Self.interval)), timeout: .seconds(2)))
        monitor.onChange = { path in seen.withLock { $0.append((now(), path)) } }
        try monitor.start()
        defer { monitor.stop() }
        func first(after mark: Int, _ condition: (Path) -> Bool) throws -> UInt64 {
            let deadline = now() + 30_000_000_000
            while now() < deadline {
                if let found = seen.withLock({ $0.dropFirst(mark).first { condition($0.path) } }) { return found.time }
                usleep(500)
            }
            throw BenchmarkError("the library's monitor did not publish the awaited path within 30 s")
        }
        _ = try first(after: 0) { $0.connectivity == .full }
        for _ in 0..<repetitions {
            try host.ip("link set dev eth0 down")
            _ = try first(after: seen.withLock(\.count) - 1) { $0.connectivity == .none }
            let mark = seen.withLock(\.count)
            try host.ip("link set dev eth0 up")
            try host.ip("route replace default via 10.1.0.1 dev eth0")
            let usable = try first(after: mark) { $0.status == .wired }
            let full = try first(after: mark) { $0.connectivity == .full }
            result.library.append(milliseconds(full - usable))
        }
    }

    /// Until reachd answers on `socket` (a watch started earlier would compute the path itself).
    private func waitForDaemon(in host: TestNamespace, socket: String) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let answer = (try? host.exec([reachctl, "status", "--json", "--bus", socket], check: false).output) ?? ""
            if answer.contains(#""source":"daemon""#) { return }
            usleep(50_000)
        }
        throw BenchmarkError("reachd did not answer on \(socket) within 20 s")
    }

    /// The first line of `watch` from index `after` on that satisfies `condition`, waiting up to 30 s.
    private func waitFor(_ watch: BackgroundProcess, after: Int, _ condition: (String) -> Bool) throws -> (time: UInt64, line: String) {
        let deadline = now() + 30_000_000_000
        while now() < deadline {
            if let found = watch.lines.dropFirst(after).first(where: { condition($0.line) }) { return found }
            usleep(500)
        }
        throw BenchmarkError(
            "reachctl watch did not print the awaited document within 30 s; its last: \(watch.lines.last?.line ?? "nothing")")
    }
}
