import Netlink
import SystemCalls

/// When the connectivity probe runs, and what it found on the current way out
/// (docs/connectivity.md): at once when the way out changes; then, while
/// not full, 1 s later doubling up to `interval`; every `interval` while full.
///
/// Shared by reachd (an sd-event timer) and the in-process monitor (its poll
/// deadline): the owner supplies the timer and calls back on its own thread,
/// which is the only thread that touches the scheduler. Each probe blocks a thread
/// of its own (`DedicatedThread.detach`) for at most its timeout and hands its
/// verdict to `post`, which must bring it back to the owner's thread and into `finish`.
package final class ConnectivityScheduler {
    /// nil when no `uri` is configured: nothing is contacted.
    package private(set) var probe: ConnectivityProbe?
    package private(set) var interval: Duration
    /// The latest verdict on the current way out; nil until its first probe answers.
    package private(set) var verdict: ConnectivityProbe.Verdict?

    private let arm: (Duration) -> Void
    private let disarm: () -> Void
    private let post: @Sendable (_ generation: Int, _ verdict: ConnectivityProbe.Verdict) -> Void

    /// The way out being probed, and a number that changes with it (and with each
    /// verdict): a verdict of an earlier one is dropped.
    private var path: Path?
    private var generation = 0
    private var backoff = Duration.seconds(1)
    /// Probes still running (a verdict not waited for any more still holds its thread).
    private var running = 0
    private var probeAgain = false
    /// A path that flaps must not hold more threads than this in resolvers and connects.
    package static let maximumRunning = 4

    private let namespace: NetworkNamespace?

    package init(
        options: ConnectivityOptions, namespace: NetworkNamespace? = nil, arm: @escaping (Duration) -> Void,
        disarm: @escaping () -> Void, post: @escaping @Sendable (_ generation: Int, _ verdict: ConnectivityProbe.Verdict) -> Void
    ) {
        self.namespace = namespace
        probe = ConnectivityProbe(options, namespace: namespace)
        interval = options.interval
        self.arm = arm
        self.disarm = disarm
        self.post = post
    }

    /// The options changed: what was found no longer holds; probe again.
    package func reconfigure(_ options: ConnectivityOptions) {
        probe = ConnectivityProbe(options, namespace: namespace)
        interval = options.interval
        if let path { pathMoved(to: path) }
    }

    /// The host slept: the verdict may belong to another network. It is forgotten
    /// (connectivity is `unknown` until the probe answers) and a probe starts.
    package func forgetVerdict() {
        if let path { pathMoved(to: path) }
    }

    /// Whether the current way out is reachable, as far as the scheduler was told.
    package var isPathReachable: Bool { path?.status.isReachable == true }

    /// Whether a probe of the current way out has yet to answer: a trust round waits
    /// for it, or a portal's interception would be judged an attack.
    package var isAwaitingFirstVerdict: Bool { probe != nil && verdict == nil && isPathReachable }

    /// Tells the scheduler about a freshly evaluated path and whether it leaves another
    /// way than the path before it (`Path.leavesTheSameWay`, decided once by the loop that
    /// evaluated it): when it moved, or is the first, what was found is forgotten and a
    /// probe starts. Returns whether it did.
    @discardableResult
    package func observe(_ fresh: Path, moved: Bool) -> Bool {
        guard moved || path == nil else { return false }
        pathMoved(to: fresh)
        return true
    }

    private func pathMoved(to fresh: Path) {
        path = fresh
        verdict = nil
        backoff = .seconds(1)
        generation += 1
        disarm()
        startProbe()
    }

    /// The timer fired: the next probe of the same way out.
    package func timerFired() { startProbe() }

    /// Probes now; a verdict of a probe already running is not waited for.
    package func probeNow() {
        generation += 1
        disarm()
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
        DedicatedThread.detach(.probe) { post(generation, probe.probe(path)) }
    }

    /// A probe answered. Returns false for a verdict on an earlier way out (or superseded).
    package func finish(_ finished: Int, _ found: ConnectivityProbe.Verdict) -> Bool {
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
            arm(interval)
        } else {
            arm(backoff)
            backoff = min(backoff * 2, interval)
        }
        return true
    }

    /// What the published document says of connectivity on `path`: `none` without a
    /// usable path, else the probe's verdict on this way out (`unknown` until it
    /// answers) — or without a probe, `unprobed`: what the owner knows otherwise.
    /// Without a probe, what a usable path itself says (docs/connectivity.md): `full`
    /// when a trust host's chain validated over it (`validated`), `limited` when no
    /// configured resolver can be reached by it — names do not resolve, whatever the
    /// routes say — else no evidence: `unknown`.
    package static func unprobed(_ path: Path, validated: Bool) -> Connectivity {
        if validated { return .full }
        return path.supportsDNS == false ? .limited : .unknown
    }

    package func state(of path: Path, unprobed: Connectivity = .unknown) -> (connectivity: Connectivity, portal: String?) {
        guard path.status.isReachable else { return (path.status == .unknown ? .unknown : .none, nil) }
        guard probe != nil else { return (unprobed, nil) }
        guard let verdict else { return (.unknown, nil) }
        return (verdict.connectivity, verdict.connectivity == .portal ? verdict.portal : nil)
    }
}
