import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// reachd through a long churn, set up as an operator would run it: a
/// connectivity probe, a pinned trust host, the metrics listener scraped all
/// along, and three `reachctl watch --json` subscribers on the private socket —
/// one of them stopped and resumed every half second, so that its socket fills.
/// The kernel changes in bursts, every tenth made while reachd is stopped so
/// that its netlink socket overruns; afterwards every subscriber must hold the
/// daemon's document, and the daemon its memory, descriptors and threads.
///
/// The soak test runs it briefly; `reachability-bench --only-soak 1` at length.
public struct DaemonSoak {
    public var changes: Int
    public var warmUpChanges: Int
    public let reachd: String
    public let reachctl: String

    public init(changes: Int, warmUpChanges: Int, reachd: String, reachctl: String) {
        self.changes = changes
        self.warmUpChanges = warmUpChanges
        self.reachd = reachd
        self.reachctl = reachctl
    }

    /// What reachd holds, from /proc.
    public struct Footprint: Sendable, CustomStringConvertible {
        public var anonymousKiB = 0, residentKiB = 0, descriptors = 0, threads = 0

        init(pid: pid_t) {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            func field(_ name: String) -> Int {
                let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
                return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
            }
            anonymousKiB = field("RssAnon")
            residentKiB = field("VmRSS")
            threads = field("Threads")
            descriptors = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
        }

        public var description: String {
            "anonymous \(anonymousKiB) KiB, RSS \(residentKiB) KiB, \(descriptors) descriptors, \(threads) threads"
        }

        /// What reachd holds for good, read 10 times over a second: the fewest descriptors and threads seen.
        /// A scrape's connection or a probe's socket open at one reading is no more reachd's than its absence
        /// at the next, and a leak is there at every reading.
        static func steady(pid: pid_t) async -> Footprint {
            var steady = Footprint(pid: pid)
            for _ in 1..<10 {
                try? await Task.sleep(for: .milliseconds(100))
                let now = Footprint(pid: pid)
                steady.descriptors = min(steady.descriptors, now.descriptors)
                steady.threads = min(steady.threads, now.threads)
            }
            return steady
        }
    }

    public struct Subscriber: Sendable {
        public var name: String
        /// Documents it printed, the first (initial) one included.
        public var documents: Int
        /// Still running at the end (a subscriber that died holds nothing).
        public var running: Bool
        /// From the last kernel change to the subscriber holding the daemon's document as it
        /// was once settled (seen by polling every 10 ms); nil when it never did within 30 s —
        /// as when the daemon moved on meanwhile (an IPv6 link-local address leaving DAD).
        public var lastStateMilliseconds: Double?
        /// Set when, after a quiet spell, it does not hold what the daemon holds: what it last
        /// printed, and the daemon's document, as compared.
        public var stale: (printed: String, daemon: String)?
    }

    public struct Result: Sendable {
        public var warm: Footprint, end: Footprint
        public var changes = 0
        public var churnSeconds = 0.0
        public var subscribers: [Subscriber] = []
        public var scrapes = 0
        /// `reachd_netlink_overruns_total` at the end: how often the kernel dropped events
        /// during the churn and reachd re-read the state.
        public var overruns = 0
        /// From the last kernel change to the daemon's document settling, its probe and
        /// trust round included (seen by polling `reachctl status` every 20 ms).
        public var settleMilliseconds = 0.0
        public var converged: Bool { subscribers.allSatisfy { $0.stale == nil } }
    }

    /// Seven changes that all succeed, ending where they began: an address, the
    /// default route, then the link bounced (which takes its routes silently).
    static func cycle(_ number: Int) -> [String] {
        let address = "10.9.\(number / 250 % 250).\(number % 250 + 1)/32"
        return [
            "addr add \(address) dev eth0", "route del default", "route add default via 10.1.0.1 dev eth0",
            "addr del \(address) dev eth0", "link set dev eth0 down", "link set dev eth0 up", "route add default via 10.1.0.1 dev eth0"
        ]
    }

    public func run() async throws -> Result {
        try await withNamespaces("soak", "soakgw") { ns in
            let (host, router) = (ns[0], ns[1])
            try host.addUplink(router: router)
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-soak-\(UUID())")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            defer { if getenv("SOAK_KEEP") == nil { try? FileManager.default.removeItem(at: scratch) } }
            try PinnedServer.makePKI(in: scratch)
            let config = try PinnedServer.config(pins: try PinnedServer.pins(in: scratch), in: scratch)
            try
                (String(contentsOf: config, encoding: .utf8) + """

                    [connectivity]
                    uri = "http://10.1.0.1/generate_204"
                    interval = "10s"
                    timeout = "1s"

                    [metrics]
                    listen = "127.0.0.1:9748"
                    """).write(to: config, atomically: true, encoding: .utf8)
            let http = try await HTTPProbeServer(in: router, address: "10.1.0.1", directory: scratch, mode: "204")
            defer { http.stop() }
            let tls = try await PinnedServer.serve(in: router, from: scratch)
            defer { kill(tls.processIdentifier, SIGKILL); tls.waitUntilExit() }

            let socket = scratch.appendingPathComponent("bus").path
            let daemon = Process()
            daemon.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            daemon.arguments = [
                "ip", "netns", "exec", host.name, reachd, "--bus", "none", "--socket", socket,
                "--config", config.path, "--log-level", getenv("SOAK_LOG_LEVEL").map { String(cString: $0) } ?? "warning"
            ]
            daemon.standardError = try FileHandle(forWritingTo: Self.file(scratch, "reachd.log"))
            try daemon.run()
            defer { kill(daemon.processIdentifier, SIGTERM); daemon.waitUntilExit() }
            let describe = { () -> String? in
                let output = (try? NamespaceTesting.run([reachctl, "status", "--json", "--bus", socket], check: false).output) ?? ""
                return output.contains("\"source\":\"daemon\"") ? Self.comparable(output) : nil
            }
            let ready = { describe().map { $0.contains("\"connectivity\":\"full\"") && $0.contains("\"trust\":\"ok\"") } ?? false }
            guard await eventually(.seconds(30), every: Self.pollInterval, ready) else {
                throw CommandFailure(
                    command: daemon.arguments ?? [],
                    result: CommandResult(status: -1, output: "", error: "reachd never reached connectivity full and trust ok"))
            }

            let names = ["steady", "steady-2", "paused"]
            var watchers: [(String, Process, URL)] = []
            for name in names {
                let output = try Self.file(scratch, "watch-\(name).jsonl")
                let watcher = Process()
                watcher.executableURL = URL(fileURLWithPath: reachctl)
                watcher.arguments = ["watch", "--json", "--bus", socket]
                watcher.standardOutput = try FileHandle(forWritingTo: output)
                watcher.standardError = try FileHandle(forWritingTo: Self.file(scratch, "watch-\(name).err"))
                try watcher.run()
                watchers.append((name, watcher, output))
            }
            defer {
                for (_, watcher, _) in watchers {
                    kill(watcher.processIdentifier, SIGCONT); kill(watcher.processIdentifier, SIGKILL); watcher.waitUntilExit()
                }
            }
            let paused = watchers[2].1.processIdentifier
            // reachctl watch falls back to watching its own namespace when no daemon answers: that would prove nothing.
            for (name, _, output) in watchers {
                let first = { ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").first ?? "" }
                guard await eventually(.seconds(20), every: Self.pollInterval, { !first().isEmpty }),
                    first().contains("\"source\":\"daemon\"")
                else {
                    throw CommandFailure(
                        command: [reachctl, "watch"],
                        result: CommandResult(status: -1, output: String(first()), error: "subscriber \(name) is not the daemon's"))
                }
            }

            let churning = Flag()
            let scrapes = Task.detached { () -> Int in
                var count = 0
                while !churning.isDown {
                    if (try? host.exec(["curl", "-sf", "-o", "/dev/null", "http://127.0.0.1:9748/metrics"], check: false).status) == 0 {
                        count += 1
                    }
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return count
            }
            let pausing = Task.detached {
                while !churning.isDown {
                    kill(paused, SIGSTOP)
                    try? await Task.sleep(for: .milliseconds(500))
                    kill(paused, SIGCONT)
                    try? await Task.sleep(for: .milliseconds(500))
                }
                kill(paused, SIGCONT)
            }

            var cycle = 0
            var bursts = 0
            func churn(_ count: Int) throws {
                var made = 0
                while made < count {
                    // Bursts of about 2,100 changes, a moment apart; every tenth is twice
                    // as long and made while reachd is stopped, so that the kernel overruns
                    // its netlink socket and it must re-read the state.
                    bursts += 1
                    let overrun = bursts % 10 == 0
                    var commands: [String] = []
                    while commands.count < min(overrun ? 4_200 : 2_100, count - made) {
                        commands += Self.cycle(cycle)
                        cycle += 1
                    }
                    if overrun { kill(daemon.processIdentifier, SIGSTOP) }
                    defer { if overrun { kill(daemon.processIdentifier, SIGCONT) } }
                    try NamespaceTesting.run(["ip", "-n", host.name, "-batch", "-"], input: commands.joined(separator: "\n") + "\n")
                    made += commands.count
                    usleep(50_000)
                }
            }

            var result = Result(warm: Footprint(pid: daemon.processIdentifier), end: Footprint(pid: daemon.processIdentifier))
            try churn(warmUpChanges)
            _ = await eventually(.seconds(30), every: Self.pollInterval, ready)
            try await Task.sleep(for: Self.quiet)
            result.warm = await Footprint.steady(pid: daemon.processIdentifier)

            let started = ContinuousClock.now
            try churn(changes)
            let lastChange = ContinuousClock.now
            result.changes = changes
            result.churnSeconds = Self.seconds(started.duration(to: lastChange))
            churning.lower()
            await pausing.value
            result.scrapes = await scrapes.value
            result.overruns = Int(metricValue("reachd_netlink_overruns_total", in: host.scrapeMetrics()) ?? 0)

            // The daemon settles (its probe and trust round after the last change), then each subscriber.
            guard await eventually(.seconds(30), every: Self.pollInterval, ready), let final = describe() else {
                let log = (try? String(contentsOf: scratch.appendingPathComponent("reachd.log"), encoding: .utf8)) ?? ""
                throw CommandFailure(
                    command: daemon.arguments ?? [],
                    result: CommandResult(
                        status: -1, output: "",
                        error: "reachd did not settle after the churn: \(describe() ?? "no answer"); \(log.suffix(1500))"))
            }
            result.settleMilliseconds = Self.milliseconds(lastChange.duration(to: .now))
            // Every subscriber is checked every 10 ms; each is timed from the last kernel change.
            var holding: [String: Double] = [:]
            let deadline = ContinuousClock.now + .seconds(30)
            while holding.count < watchers.count, ContinuousClock.now < deadline {
                for (name, _, output) in watchers where holding[name] == nil {
                    if Self.lastLine(of: output).map(Self.comparable) == final {
                        holding[name] = Self.milliseconds(lastChange.duration(to: .now))
                    }
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            try await Task.sleep(for: Self.quiet)
            // Converged: after the quiet spell every subscriber holds what the daemon holds.
            let end = describe() ?? "no answer"
            for (name, watcher, output) in watchers {
                let documents = ((try? Data(contentsOf: output)) ?? Data()).count { $0 == UInt8(ascii: "\n") }
                let printed = Self.lastLine(of: output).flatMap(Self.comparable) ?? "nothing"
                result.subscribers.append(
                    Subscriber(
                        name: name, documents: documents, running: watcher.isRunning,
                        lastStateMilliseconds: holding[name], stale: printed == end ? nil : (printed, end)))
            }
            result.end = await Footprint.steady(pid: daemon.processIdentifier)
            return result
        }
    }

    /// How long reachd is left alone before its footprint is read: libdispatch ends
    /// a worker thread (the probe's, name resolution's) after 5 s without work.
    static let quiet = Duration.seconds(6)
    /// How often the soak reads reachd's state: the resolution of "settled … after the last change".
    static let pollInterval = Duration.milliseconds(20)

    /// The document without what may differ between two readings of the same path, keys sorted.
    static func comparable(_ json: String) -> String? {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return nil }
        object["since"] = nil
        object["initial"] = nil
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) }
    }

    static func file(_ directory: URL, _ name: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        return url
    }

    /// The last line of a file that only grows, reading no more than its tail.
    static func lastLine(of file: URL) -> String? {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return nil }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: size > 262_144 ? size - 262_144 : 0)
        let tail = (try? handle.readToEnd()) ?? Data()
        return String(decoding: tail, as: UTF8.self).split(separator: "\n").last.map(String.init)
    }

    static func milliseconds(_ duration: Duration) -> Double { seconds(duration) * 1000 }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Raised while the churn lasts; the helpers stop when it is lowered.
    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var down = false
        var isDown: Bool { lock.withLock { down } }
        func lower() { lock.withLock { down = true } }
    }
}
