import DaemonDecisions
import ReachabilityCore
import SDBus
import SystemCalls

/// The daemon's side of every way out (docs/connectivity.md, "Every way out"): the
/// configured probe bound to each available interface but the path's own, on the
/// schedule of `WaysOutScheduler`, off the loop. Without a probe nothing is contacted
/// and nothing judged. Lives on the loop thread.
final class WaysOutChecker {
    private struct Probed: Sendable {
        var index: Int32
        var generation: Int
        var verdict: Connectivity
    }

    /// The configured probe (nil: none), shared with the schedule's start.
    private final class Configured {
        var probe: ConnectivityProbe?
        init(_ probe: ConnectivityProbe?) { self.probe = probe }
    }

    private let configured: Configured
    private let schedule: WaysOutScheduler
    /// The probes' verdicts, handed over by `Mailbox`.
    private var verdicts: EventLoop.Watch?

    /// - Parameter changed: on the loop when a published verdict changed.
    init(options: ConnectivityOptions, loop: EventLoop, changed: @escaping () -> Void) throws {
        let configured = Configured(ConnectivityProbe(options))
        self.configured = configured
        var timer: EventLoop.Timer?
        let mailbox = try Mailbox<Probed>()
        schedule = WaysOutScheduler(interval: options.interval, timer: .init(arm: { timer?.arm(after: $0) }, disarm: { timer?.disarm() })) {
            wayOut, generation in
            guard let probe = configured.probe, let index = wayOut.interface?.index else { return }
            DedicatedThread.detach(.probe) {
                mailbox.post(Probed(index: Int32(index), generation: generation, verdict: probe.probe(wayOut).connectivity))
            }
        }
        timer = try loop.timer { [unowned schedule] in schedule.timerFired() }
        verdicts = try mailbox.deliver(on: loop) { [unowned schedule] posted in
            var moved = false
            for probed in posted where schedule.finish(probed.index, probed.generation, probed.verdict) { moved = true }
            if moved { changed() }
        }
    }

    /// This way out's own verdict.
    func verdict(of index: Int) -> Connectivity? { schedule.verdict(of: index) }

    /// The ways out of a freshly evaluated path (`waysOut` leaves the path's own interface
    /// out); none while no probe is configured or the path goes through a VPN (no probe
    /// leaves outside the tunnel). The document composed next carries what changed.
    func observe(_ path: Path, waysOut: (_ excluding: Int?) -> [Path]) {
        schedule.update(configured.probe != nil && path.vpn == nil ? waysOut(path.interface?.index) : [])
    }

    /// A reload changed `[connectivity]`: what was found no longer holds.
    func reconfigure(_ options: ConnectivityOptions) {
        configured.probe = ConnectivityProbe(options)
        schedule.reconfigure(interval: options.interval)
        schedule.update([])
    }

    /// The host slept, or `CheckConnectivity()` was called: every way out is judged again.
    func forgetVerdicts() { schedule.forgetVerdicts() }
}
