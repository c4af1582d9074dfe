import Foundation
import NamespaceTesting

#if canImport(Glibc)
import Glibc
#endif

/// The metrics exports: what a scrape costs reachd (CPU, bytes) with 1, 50 and
/// 500 trust hosts, the daemon's idle memory with and without metrics, and its
/// CPU with a scrape every second. The trust hosts are 127.0.0.1:9, where
/// nothing listens: every round judges them `unreachable` at once, and each
/// still has its 9-state verdict set and counters (the expiry gauge, present only
/// for validated chains, adds one line per host to a real fleet's scrape).
struct MetricsBenchmark {
    let reachd: String
    let hostCounts: [Int]
    let scrapes: Int
    let idleSeconds: Int

    struct Scrape {
        var hosts = 0, bytes = 0
        var cpuMicroseconds = 0.0
        var clientMilliseconds: [Double] = []
    }

    struct Result {
        var scrapes: [Scrape] = []
        var rssWithoutMetricsKiB = 0, rssWithMetricsKiB = 0
        var idleCPUPercent = 0.0
        var idleScrapeBytes = 0
    }

    func run() throws -> Result {
        let site = try BenchSite("met")
        let (host, scratch) = (site.host, site.scratch)

        var result = Result()
        // Idle memory, the same binary without and with both exports.
        for metrics in [false, true] {
            let config = try write(hosts: 0, metrics: metrics, in: scratch)
            let daemon = try start(in: host, config: config, scratch: scratch)
            defer { stopProcess(daemon) }
            if metrics { _ = try scrape(in: host, times: 1) }
            sleep(3)
            if metrics {
                result.rssWithMetricsKiB = residentKiB(of: daemon.processIdentifier)
            } else {
                result.rssWithoutMetricsKiB = residentKiB(of: daemon.processIdentifier)
            }
        }
        for hosts in hostCounts {
            let config = try write(hosts: hosts, metrics: true, in: scratch)
            let daemon = try start(in: host, config: config, scratch: scratch)
            defer { stopProcess(daemon) }
            try waitForRound(hosts: hosts, in: host)
            // Between rounds: hosts on on-change re-check only on a path change, so nothing else runs.
            let before = Self.cpuNanoseconds(of: daemon.processIdentifier)
            let (bytes, latencies) = try scrape(in: host, times: scrapes)
            let used = Double(Self.cpuNanoseconds(of: daemon.processIdentifier) - before) / 1000
            result.scrapes.append(
                Scrape(hosts: hosts, bytes: bytes, cpuMicroseconds: used / Double(scrapes), clientMilliseconds: latencies))
        }
        // A scrape every second, one host, otherwise idle.
        let config = try write(hosts: 1, metrics: true, in: scratch)
        let daemon = try start(in: host, config: config, scratch: scratch)
        defer { stopProcess(daemon) }
        try waitForRound(hosts: 1, in: host)
        let before = Self.cpuNanoseconds(of: daemon.processIdentifier)
        let (bytes, _) = try scrape(in: host, times: idleSeconds, interval: 1)
        result.idleScrapeBytes = bytes
        result.idleCPUPercent = Double(Self.cpuNanoseconds(of: daemon.processIdentifier) - before) / 1e9 / Double(idleSeconds) * 100
        return result
    }

    func write(hosts: Int, metrics: Bool, in directory: URL) throws -> URL {
        var text = ""
        if hosts > 0 {
            text += "[trust]\ntimeout = \"1s\"\nreports = \"\(directory.appendingPathComponent("reports").path)\"\n"
            for index in 0..<hosts {
                text += "\n[[trust.host]]\nmatch = \"h\(index).bench.test\"\nport = 9\nconnect = \"127.0.0.1\"\n"
            }
        }
        if metrics {
            text += "\n[metrics]\nlisten = \"127.0.0.1:9748\"\ntextfile = \"\(directory.appendingPathComponent("reachd.prom").path)\"\n"
        }
        let config = directory.appendingPathComponent("reachd.toml")
        try text.write(to: config, atomically: true, encoding: .utf8)
        return config
    }

    func start(in namespace: TestNamespace, config: URL, scratch: URL) throws -> Process {
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        daemon.arguments = [
            "ip", "netns", "exec", namespace.name, reachd, "--bus", "none", "--socket", scratch.appendingPathComponent("bus").path,
            "--config", config.path, "--log-level", "warning"
        ]
        try daemon.run()
        return daemon
    }

    /// Until every host has a verdict in the exposition.
    func waitForRound(hosts: Int, in namespace: TestNamespace) throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = (try? namespace.exec(["curl", "-sS", "--max-time", "5", "http://127.0.0.1:9748/metrics"], check: false).output) ?? ""
            if text.components(separatedBy: "verdict=\"unreachable\"} 1").count - 1 == hosts { return }
            usleep(200_000)
        }
        throw BenchmarkError("reachd did not judge \(hosts) hosts within 60 s")
    }

    /// `times` scrapes by one client in the namespace: the response size, and each scrape's time as the client saw it.
    func scrape(in namespace: TestNamespace, times: Int, interval: Double = 0) throws -> (bytes: Int, milliseconds: [Double]) {
        let script = """
            import socket, sys, time
            times, interval = int(sys.argv[1]), float(sys.argv[2])
            size = 0
            for _ in range(times):
                start = time.monotonic()
                s = socket.create_connection(("127.0.0.1", 9748))
                s.sendall(b"GET /metrics HTTP/1.1\\r\\nHost: bench\\r\\nAccept: text/plain;version=0.0.4\\r\\n\\r\\n")
                data = b""
                while True:
                    chunk = s.recv(1 << 20)
                    if not chunk: break
                    data += chunk
                s.close()
                elapsed = time.monotonic() - start
                size = len(data.split(b"\\r\\n\\r\\n", 1)[1])
                print(round(elapsed * 1000, 4))
                if interval: time.sleep(interval)
            print("bytes", size)
            """
        let output = try namespace.exec(["python3", "-c", script, String(times), String(interval)]).output
        var milliseconds: [Double] = [], bytes = 0
        for line in output.split(separator: "\n") {
            if line.hasPrefix("bytes ") {
                bytes = Int(line.dropFirst(6)) ?? 0
            } else if let value = Double(line) {
                milliseconds.append(value)
            }
        }
        return (bytes, milliseconds)
    }

    /// CPU time of every thread of `pid`, in ns (schedstat: finer than clock ticks).
    static func cpuNanoseconds(of pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { sum, task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? ""
            return sum + (Int(text.split(separator: " ").first ?? "") ?? 0)
        }
    }
}
