import ReachabilityBus
import ReachabilityCore
import SDBus

/// The daemon's side of connectivity: the shared schedule on an sd-event timer,
/// and `CheckConnectivity()` callers waiting for the next verdict. Lives on the
/// loop thread.
final class ConnectivityChecker {
    let schedule: ConnectivityScheduler
    private var waiters: [(Result<String, BusMethodError>) -> Void] = []
    /// What the waiters wait for: the probe's next verdict, the captive-portal API's next answer.
    private var awaitingProbe = false
    private var awaitingAPI = false
    /// The probes' verdicts, handed over by `Mailbox`.
    private var verdicts: EventLoop.Watch?

    /// A probe's verdict, posted back to the loop from the probe's thread.
    private struct Probed: Sendable {
        var generation: Int
        var verdict: ConnectivityProbe.Verdict
    }

    /// - Parameter verdict: runs on the loop when a current probe answered (the schedule holds
    ///   the verdict), with whether it moved connectivity from an earlier verdict.
    init(options: ConnectivityOptions, loop: EventLoop, verdict: @escaping (_ moved: Bool) -> Void) throws {
        // The schedule's arm/disarm closures hold the timer; the timer's callback only a reference back.
        var timer: EventLoop.Timer?
        let mailbox = try Mailbox<Probed>()
        schedule = ConnectivityScheduler(
            options: options, arm: { timer?.arm(after: $0) }, disarm: { timer?.disarm() },
            post: { mailbox.post(Probed(generation: $0, verdict: $1)) })
        timer = try loop.timer { [unowned schedule] in schedule.timerFired() }
        verdicts = try mailbox.deliver(on: loop) { [unowned schedule] posted in
            for probed in posted {
                let before = schedule.verdict?.connectivity
                guard schedule.finish(probed.generation, probed.verdict) else { continue }
                verdict(before != nil && before != probed.verdict.connectivity)
            }
        }
    }

    /// A reload changed `[connectivity]`: what was found no longer holds; probe again.
    func reconfigure(_ options: ConnectivityOptions) {
        schedule.reconfigure(options)
        answerWaiters()
    }

    /// A freshly evaluated path: probes at once when it leaves another way.
    func observe(_ path: Path, moved: Bool) {
        if schedule.observe(path, moved: moved), !path.status.isReachable { answerWaiters() }
    }

    /// The probe answered: waiters are answered once the API has too.
    func probeAnswered(_ state: Connectivity?) {
        awaitingProbe = false
        if !awaitingAPI { answerWaiters(with: state) }
    }

    /// The captive-portal API answered (or could not be asked): waiters are answered once the probe has too.
    func captivePortalAPIAnswered(_ state: Connectivity?) {
        awaitingAPI = false
        if !awaitingProbe { answerWaiters(with: state) }
    }

    /// Answers `CheckConnectivity()` callers with the state published after this verdict.
    private func answerWaiters(with state: Connectivity? = nil) {
        (awaitingProbe, awaitingAPI) = (false, false)
        let answer = state ?? (schedule.isPathReachable ? .unknown : Connectivity.none)
        let waiting = waiters
        waiters = []
        for reply in waiting { reply(.success(answer.rawValue)) }
    }

    /// `CheckConnectivity()`: probes now, at most once per 10 s (like RecheckTrust). Without a
    /// probe, `captivePortalAPI` says whether the network's captive-portal API is being asked
    /// instead: the answer then waits for it.
    func checkNow(captivePortalAPI: Bool, reply: @escaping (Result<String, BusMethodError>) -> Void) {
        guard schedule.probe != nil || captivePortalAPI else {
            return reply(
                .failure(
                    .failed(
                        "no [connectivity] uri is configured and the network announces no captive-portal API: connectivity comes from the trust rounds"
                    )))
        }
        guard schedule.isPathReachable else { return reply(.success(Connectivity.none.rawValue)) }
        waiters.append(reply)
        awaitingAPI = awaitingAPI || captivePortalAPI
        if schedule.probe != nil {
            awaitingProbe = true
            schedule.probeNow()
        }
    }
}
