import EmbeddedKernel
import ReachabilityCore
import ReachdMetrics
import SDBus

@testable import ReachdProgram

/// A whole `Daemon` in this process, on an embedded kernel, its sd-event loop on the
/// test's thread: the daemon's own timers and publication, with no namespace, no
/// bus and no root. Nothing but the embedded kernel is asked (no probe, no
/// captive-portal API, no trust helper).
final class EmbeddedDaemon {
    let kernel = EmbeddedKernel()
    let loop: EventLoop
    private(set) var daemon: Daemon!
    /// Set to make the next watch on an engine's socket fail, as `sd_event_add_io` can.
    var failNextWatch = false

    init() throws {
        loop = try EventLoop()
        var configuration = DaemonConfiguration()
        configuration.connectivity.capport = .off
        var access = Daemon.KernelAccess.engines(on: kernel, loop: loop)
        let watch = access.watch
        access.watch = { [unowned self] engine, readable in
            if failNextWatch {
                failNextWatch = false
                throw BusError("watching descriptor \(engine.fileDescriptor)", code: 12) // ENOMEM
            }
            return try watch(engine, readable)
        }
        // What it logs is of no interest here, beyond not being mixed into the test's output.
        let log = Log(threshold: .error) { _, _ in }
        daemon = try Daemon(
            configFile: "/nonexistent", configuration: configuration, helper: nil, loop: loop, log: log, kernel: access)
        daemon.publishCurrentPath()
    }

    /// A metric's value, as a scrape would read it (its first sample).
    func metric(_ name: String) -> Double? {
        daemon.metricsFamilies().first { $0.name == name }?.samples.first?.value
    }

    /// One step: once the published path satisfies `until` (looked at every millisecond), `then` acts on it.
    struct Step {
        var until: (Path) -> Bool
        var then: (Path) -> Void
    }

    /// The path as `Describe()` publishes it.
    var path: Path { (try? Path(json: daemon.describe())) ?? .unknown() }

    /// Runs the loop through `steps`, in order; false when `deadline` came first.
    func run(_ steps: [Step], deadline: Duration = .seconds(10)) throws -> Bool {
        var steps = steps
        var check: EventLoop.Timer?
        check = try loop.timer { [unowned self] in
            let path = path
            if let step = steps.first, step.until(path) {
                steps.removeFirst()
                step.then(path)
            }
            if steps.isEmpty { loop.exit(0) } else { check?.arm(after: .milliseconds(1)) }
        }
        let timeout = try loop.timer { [unowned self] in loop.exit(1) }
        timeout.arm(after: deadline)
        check?.arm(after: .zero)
        return try loop.run() == 0
    }
}
