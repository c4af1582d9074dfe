import Reachability
import Testing

/// UI code's callbacks: on the main actor, the current path first, then changes; cancel ends them.
/// The host's own network, read-only: runs as any user.
@Suite("onMainActorChange: callbacks on the main actor")
@MainActor
struct MainActorDeliveryTests {
    /// What the handler saw; main-actor state, as a UI's label is.
    final class Label {
        var texts: [String] = []
        var statuses: [ReachabilityStatus] = []
    }

    @Test("the current path, marked initial, and the status alone, on the main actor")
    func delivered() async throws {
        let monitor = ReachabilityMonitor()
        let label = Label()
        let paths = monitor.onMainActorChange { path in
            MainActor.assertIsolated()
            label.texts.append(path.initial ? "initial \(path.status)" : "\(path.status)")
        }
        let statuses = monitor.onMainActorChange(of: \.status) { status in label.statuses.append(status) }
        try monitor.start()
        defer { monitor.stop() }
        let deadline = ContinuousClock.now + .seconds(10)
        while (label.texts.isEmpty || label.statuses.isEmpty) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(label.texts.first == "initial \(monitor.currentPath!.status)")
        #expect(label.statuses.first == monitor.currentPath?.status)
        paths.cancel()
        statuses.cancel()
    }
}
