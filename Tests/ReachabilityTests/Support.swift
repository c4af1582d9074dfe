import Foundation
import NamespaceTesting
import Reachability
import Synchronization
import Testing

/// Options that watch the test's namespace through `setns`.
func options(
    _ namespace: TestNamespace, receiveBufferSize: Int = 4 << 20, ignore: [String] = [],
    metered: [String] = []
) throws -> MonitorOptions {
    try MonitorOptions(
        ignore: ignore, metered: metered, receiveBufferSize: receiveBufferSize,
        networkNamespace: namespace.path)
}

/// The path of the namespace, computed once.
func path(_ namespace: TestNamespace, to target: ReachabilityMonitor.Target = .defaultPath) throws -> Path {
    try ReachabilityMonitor.path(to: target, options: options(namespace))
}

/// A namespace with an uplink to a router namespace (`ns[1]`), watched by a
/// running monitor that is stopped when `body` ends.
func withWatchedUplink<T>(
    _ label: String, defaultRoute: Bool = true,
    _ body: ([TestNamespace], ReachabilityMonitor) async throws -> T
) async throws -> T {
    try await withNamespaces(label, "router") { ns in
        try ns[0].addUplink(router: ns[1], defaultRoute: defaultRoute)
        let monitor = ReachabilityMonitor(options: try options(ns[0]))
        try monitor.start()
        defer { monitor.stop() }
        return try await body(ns, monitor)
    }
}

struct Timeout: Error, CustomStringConvertible {
    var what: String
    var last: Path?
    var description: String { "timed out waiting for \(what); last path: \(last?.jsonString() ?? "none")" }
}

/// Waits until the monitor's current path satisfies `condition`.
@discardableResult
func waitForPath(
    _ monitor: ReachabilityMonitor, _ what: String, timeout: Duration = .seconds(10),
    _ condition: (Path) -> Bool
) async throws -> Path {
    let deadline = ContinuousClock.now + timeout
    while true {
        // Checked once more after the deadline: a starved cooperative pool (the suites
        // run in parallel on 2 cores) may resume this task late, with the path long right.
        if let path = monitor.currentPath, condition(path) { return path }
        if ContinuousClock.now >= deadline { break }
        try await Task.sleep(for: .milliseconds(1))
    }
    throw Timeout(what: what, last: monitor.currentPath)
}

/// Expects the monitor's path to come to agree with a fresh look at `namespace` (within
/// `eventually`'s bound): for changes whose end state the kernel reaches in steps of its own.
func expectAgreesWithFreshLook(
    _ monitor: ReachabilityMonitor, _ namespace: TestNamespace, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    var fresh: Path?
    let agreed = try await eventually {
        fresh = try ReachabilityMonitor.path(options: options(namespace))
        return monitor.currentPath.map { fresh?.isSamePath(as: $0) == true } == true
    }
    #expect(
        agreed, "a fresh look: \(fresh?.jsonString() ?? "none"); the monitor's: \(monitor.currentPath?.jsonString() ?? "none")",
        sourceLocation: sourceLocation)
}

/// Collects everything an `onChange` handler receives.
final class Recorder: Sendable {
    private let received = Mutex<[Path]>([])
    var paths: [Path] { received.withLock { $0 } }
    func record(_ path: Path) { received.withLock { $0.append(path) } }
}

/// The calling thread's name, as `ps -L` and `top -H` show it.
func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
}
