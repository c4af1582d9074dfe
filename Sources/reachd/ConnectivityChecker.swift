import Dispatch
import ReachabilityBus
import ReachabilityCore

/// The daemon's connectivity (CONTRACT.md, Connectivity): when the HTTP probe runs
/// and what it found on the current way out. Lives on the loop thread; each probe
/// blocks a Dispatch thread for at most its timeout and posts its verdict back.
final class ConnectivityChecker {
    /// nil when `[connectivity] uri` is not set: nothing is contacted.
    private(set) var probe: ConnectivityProbe?
    private(set) var interval: Duration
    private var timer: EventLoop.Timer!
    private let post: @Sendable (_ generation: Int, _ verdict: ConnectivityProbe.Verdict) -> Void

    /// The way out being probed, and a number that changes with it (and with each
    /// probe): a verdict of an earlier one is dropped.
    private var path: Path?
    private var generation = 0
    /// The latest verdict on `path`; nil until its first probe answers.
    private(set) var verdict: ConnectivityProbe.Verdict?
    /// While not full: 1 s after the move, doubling up to `interval`.
    private var backoff = Duration.seconds(1)
    /// Probes still running (a verdict not waited for any more still holds its thread).
    private var running = 0
    private var probeAgain = false
    /// A path that flaps must not hold more threads than this in resolvers and connects.
    static let maximumRunning = 4

    private var lastCheckRequest: ContinuousClock.Instant?
    private var waiters: [(Result<String, BusMethodError>) -> Void] = []

    init(options: ConnectivityOptions, loop: EventLoop, post: @escaping @Sendable (Int, ConnectivityProbe.Verdict) -> Void) throws {
        probe = ConnectivityProbe(options)
        interval = options.interval
        self.post = post
        timer = try loop.timer { [unowned self] in startProbe() }
    }

    /// A reload changed `[connectivity]`: what was found no longer holds; probe again.
    func reconfigure(_ options: ConnectivityOptions) {
        probe = ConnectivityProbe(options)
        interval = options.interval
        answerWaiters()
        if let path { pathMoved(to: path) }
    }

    /// Whether a probe of the current way out has yet to answer: a trust round waits
    /// for it, or a portal's interception would be judged an attack.
    var isAwaitingFirstVerdict: Bool { probe != nil && verdict == nil && path?.status.isReachable == true }

    /// The way out changed (or it is the first): forget what was found, probe at once.
    func pathMoved(to path: Path) {
        self.path = path
        verdict = nil
        backoff = .seconds(1)
        generation += 1
        timer.disarm()
        guard probe != nil else { return }
        guard path.status.isReachable else { return answerWaiters() }
        startProbe()
    }

    private func startProbe() {
        guard let probe, let path, path.status.isReachable else { return }
        guard running < Self.maximumRunning else {
            probeAgain = true
            return
        }
        running += 1
        let generation = generation
        let post = post
        DispatchQueue.global().async { post(generation, probe.probe(path)) }
    }

    /// A probe answered. Returns false for a verdict on an earlier way out (or superseded).
    func finish(_ finished: Int, _ found: ConnectivityProbe.Verdict) -> Bool {
        running -= 1
        if probeAgain, running < Self.maximumRunning {
            probeAgain = false
            startProbe()
        }
        guard finished == generation else { return false }
        generation += 1
        verdict = found
        if found.connectivity == .full {
            backoff = .seconds(1)
            timer.arm(after: interval)
        } else {
            timer.arm(after: backoff)
            backoff = min(backoff * 2, interval)
        }
        return true
    }

    /// Answers `CheckConnectivity()` callers with the state published after this verdict.
    func answerWaiters(with state: Connectivity? = nil) {
        let answer = state ?? (path?.status.isReachable == true ? .unknown : Connectivity.none)
        let waiting = waiters
        waiters = []
        for reply in waiting { reply(.success(answer.rawValue)) }
    }

    /// `CheckConnectivity()`: probes now, at most once per 10 s (like RecheckTrust).
    func checkNow(reply: @escaping (Result<String, BusMethodError>) -> Void) {
        guard probe != nil else {
            return reply(.failure(.failed("no [connectivity] uri is configured: connectivity comes from the trust rounds")))
        }
        guard let path, path.status.isReachable else { return reply(.success(Connectivity.none.rawValue)) }
        if let last = lastCheckRequest, last.duration(to: .now) < .seconds(10) {
            return reply(.failure(.limitsExceeded("CheckConnectivity is rate-limited to once per 10 s")))
        }
        lastCheckRequest = .now
        waiters.append(reply)
        generation += 1
        timer.disarm()
        startProbe()
    }
}
