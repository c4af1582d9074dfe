import Foundation
import NamespaceTesting
import ReachabilityCore

#if canImport(Glibc)
import Glibc
#endif

/// Monotonic time in nanoseconds.
func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

/// The p-th percentile (nearest rank) of samples in milliseconds.
func percentile(_ samples: [Double], _ p: Double) -> Double {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

/// CPU time (ns) a process has used, all threads: the sum of /proc/PID/task/*/schedstat.
func cpuNanoseconds(of pid: Int32) -> UInt64 {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.reduce(0) { total, task in
        let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? ""
        return total + (text.split(separator: " ").first.flatMap { UInt64($0) } ?? 0)
    }
}

/// Resident set size in KiB (VmRSS).
func residentKiB(of pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

func format(_ value: Double, _ digits: Int = 3) -> String { String(format: "%.\(digits)f", value) }

/// A program running in the background, its output lines collected.
final class BackgroundProcess: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var collected: [(time: UInt64, line: String)] = []
    private var pending = Data()
    let started: UInt64

    init(_ arguments: [String]) throws {
        started = now()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        output.fileHandleForReading.readabilityHandler = { [self] handle in
            let data = handle.availableData
            let time = now()
            lock.lock()
            defer { lock.unlock() }
            pending.append(data)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                collected.append((time, String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)))
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var lines: [(time: UInt64, line: String)] { lock.lock(); defer { lock.unlock() }; return collected }

    func waitForLines(_ count: Int, timeout: Double = 30) -> Bool {
        let deadline = now() + UInt64(timeout * 1e9)
        while lines.count < count && now() < deadline { usleep(1_000) }
        return lines.count >= count
    }

    func stop() { stopProcess(process) }
}

/// Stops every child the benchmark started: SIGTERM, then SIGKILL after 5 s. A
/// child inherits the signal mask of the thread that spawned it, and a Dispatch
/// worker blocks SIGTERM: `python3` and `ip monitor` started from one never saw
/// the SIGTERM, and waiting for them hung `make bench` (three times). reachd reads
/// its signals from a signalfd, so it stops at the SIGTERM whatever its mask.
func stopProcess(_ process: Process) {
    kill(process.processIdentifier, SIGTERM)
    let deadline = now() + 5_000_000_000
    while process.isRunning && now() < deadline { usleep(10_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
}

/// A namespace with an uplink (veth to a router namespace, default route), and
/// once `startWatchers` ran, `reachctl watch --json` beside `ip monitor` — the
/// monitor under test and the raw reference, each in its own process.
final class WatchedNamespace {
    let host: TestNamespace
    let router: TestNamespace
    private(set) var watch: BackgroundProcess!
    private(set) var reference: BackgroundProcess!

    init(_ label: String) throws {
        host = try TestNamespace(label)
        router = try TestNamespace(label + "r")
        try host.addUplink(router: router)
    }

    /// Starts both watchers and waits for reachctl's first path.
    /// - Parameter objects: what `ip monitor` listens to ("route", …; none: everything).
    func startWatchers(reachctl: String, referenceObjects: [String] = []) throws {
        reference = try BackgroundProcess(["ip", "-n", host.name, "monitor"] + referenceObjects)
        watch = try BackgroundProcess(["ip", "netns", "exec", host.name, reachctl, "watch", "--json"])
        guard watch.waitForLines(1) else { throw BenchmarkError("reachctl watch printed nothing") }
    }

    /// CPU (ns) used so far by reachctl watch and by the reference.
    var cpu: (watch: UInt64, reference: UInt64) { (cpuNanoseconds(of: watch.pid), cpuNanoseconds(of: reference.pid)) }

    /// What a fresh look at the kernel says now.
    func freshPath() throws -> Path {
        try ReachabilityMonitor.path(options: MonitorOptions(networkNamespace: host.path))
    }

    /// reachctl's last document.
    func lastWatchedPath() throws -> Path {
        try Path(json: watch.lines.last?.line ?? "")
    }

    deinit {
        watch?.stop()
        reference?.stop()
        host.remove()
        router.remove()
    }
}

/// Where a benchmark runs: a namespace with an uplink (veth to a router namespace,
/// default route) and a scratch directory, all removed when it goes.
final class BenchSite {
    let host: TestNamespace
    let router: TestNamespace
    let scratch: URL

    init(_ label: String) throws {
        host = try TestNamespace("bench-\(label)")
        router = try TestNamespace("bench-\(label)r")
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(label)-\(UUID())")
        do {
            try host.addUplink(router: router)
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        } catch {
            host.remove()
            router.remove()
            throw error
        }
    }

    /// reachd in the host namespace, its private socket in the scratch directory;
    /// by default with no bus and no config.
    func startDaemon(
        _ reachd: String, logLevel: String, bus: String = "none", config: String = "/nonexistent"
    ) throws -> (daemon: Process, socket: String) {
        let socket = scratch.appendingPathComponent("bus").path
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        daemon.arguments = [
            "ip", "netns", "exec", host.name, reachd, "--bus", bus, "--socket", socket, "--config", config,
            "--log-level", logLevel
        ]
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        return (daemon, socket)
    }

    deinit {
        try? FileManager.default.removeItem(at: scratch)
        host.remove()
        router.remove()
    }
}
