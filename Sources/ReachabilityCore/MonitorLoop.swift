import Dispatch
import FoundationEssentials
import IPAddresses
import Netlink
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The event loop of a `ReachabilityMonitor`: one thread that runs the
/// `PathWatcher` — polls the netlink socket (and a pipe for stop requests and
/// name resolutions), and lets the watcher decide what each batch of events asks.
/// It sleeps in `poll` with no timeout while the network is quiet; the only
/// timed wake-ups are the watcher's (re-checks after an IPv4 route removal, a
/// failed re-read retried) and, when a connectivity probe is configured, its schedule.
package final class MonitorLoop: @unchecked Sendable {
    // Touched only by the loop thread once it runs (and by `start` before that).
    private var watcher: PathWatcher!
    private var engine: PathEngine { watcher.engine }
    private var watcherDue: ContinuousClock.Instant?
    private var addresses: [IPAddress]
    /// The path evaluated last, which the next is compared with (`publish`); kept only
    /// with a probe or a host name, the only ones that ask whether the path moved.
    private var lastEvaluated: Path?
    /// The host name the target names, which is resolved again when the path moves (nil: none).
    private let hostName: String?

    private let target: ReachabilityMonitor.Target
    private weak var monitor: ReachabilityMonitor?
    /// The loop polls it; stop requests, resolutions and probe verdicts signal it.
    private let wake: WakePipe
    private let stopRequested = Atomic<Bool>(false)
    private let resolved = Mutex<[IPAddress]?>(nil)
    private var thread: DedicatedThread?
    /// The host name's lookup: none running, one running, or one running whose answer
    /// is already old (the path moved again meanwhile), so another follows it.
    private var lookup = Lookup.idle
    private enum Lookup { case idle, running, runningThenAgain }
    /// nil without a probe URL. Its timer is `probeDue`; verdicts come back through `probed` and the pipe.
    private var connectivity: ConnectivityScheduler?
    /// The resolv.conf followed for the path's `dns` (nil: not followed).
    private let resolvConf: ResolvConfWatch?
    private var probeDue: ContinuousClock.Instant?
    private let probed = Mutex<[(generation: Int, verdict: ConnectivityProbe.Verdict)]>([])
    /// Work other threads ask of the loop's thread (the engine is not thread-safe).
    private let requests = Mutex<[@Sendable () -> Void]>([])

    init(
        engine: PathEngine, target: ReachabilityMonitor.Target, connectivity options: ConnectivityOptions,
        monitor: ReachabilityMonitor
    ) throws {
        self.target = target
        self.monitor = monitor
        if case let .host(host) = target, IPAddress(host) == nil { hostName = host } else { hostName = nil }
        addresses = Self.resolve(target)
        wake = try WakePipe()
        resolvConf = try engine.options.resolvConf.map { try ResolvConfWatch(path: $0) }
        engine.dnsServers = resolvConf?.servers
        let allowed = monitor.allowedInterfaceTypes
        watcher = PathWatcher(
            engine: engine,
            timer: .init(arm: { [unowned self] in watcherDue = .now + $0 }, disarm: { [unowned self] in watcherDue = nil }),
            evaluate: { [unowned self] in Self.evaluate($0, target: target, addresses: addresses, allowed: allowed) },
            offer: { [unowned self] in publish($0) },
            interfacesChanged: { [unowned self] in self.monitor?.publish(interfaceChanges: $0) })
        guard options.uri != nil else { return }
        connectivity = ConnectivityScheduler(
            options: options, namespace: engine.options.networkNamespace.map(NetworkNamespace.init(path:)),
            arm: { [unowned self] in probeDue = .now + $0 },
            disarm: { [unowned self] in probeDue = nil },
            post: { [weak self] generation, verdict in
                guard let self else { return }
                probed.withLock { $0.append((generation, verdict)) }
                signalWake()
            })
    }

    /// The addresses a target stands for. A name that does not resolve stands for none.
    static func resolve(_ target: ReachabilityMonitor.Target) -> [IPAddress] {
        guard case let .host(host) = target else { return [] }
        if let literal = IPAddress(host) { return [literal] }
        return (try? HostResolver.resolve(host)) ?? []
    }

    /// The path to `target`; with `watch` false, a one-off answer that leaves what the engine watches as it is.
    /// `allowed`: the interface types the path may leave by.
    package static func evaluate(
        _ engine: PathEngine, target: ReachabilityMonitor.Target, addresses: [IPAddress],
        watch: Bool = true, allowed: Set<InterfaceType> = Set(InterfaceType.allCases)
    ) -> Path {
        switch target {
        case .defaultPath:
            return engine.evaluateDefaultPath(allowed: allowed, watch: watch)
        case let .host(host) where addresses.isEmpty:
            // The name does not resolve: if the network itself is down, that is the answer;
            // otherwise nobody knows the destination's path.
            let network = engine.evaluateDefaultPath(allowed: allowed, watch: watch)
            var path = network.status.isReachable ? .unknown(destination: host) : network
            path.destination = host
            path.interfaces = network.interfaces
            path.routes = []
            return path
        case let .host(host):
            return engine.evaluate(destination: host, addresses: addresses, watch: watch, allowed: allowed)
        }
    }

    func publishCurrentPath() { watcher.evaluateNow() }

    /// Whether the engine keeps interface changes (someone subscribed to them); the next batch of events is the first it keeps.
    func trackInterfaces(_ on: Bool) {
        onLoop { [self] in engine.tracksInterfaces = on }
    }

    /// Turns interface tracking on and hands `subscribe` the inventory, on the loop's
    /// thread: a change comes either in the inventory or after it, never in neither.
    func subscribeInterfaces(_ subscribe: @escaping @Sendable ([InterfaceChange]) -> Void) {
        onLoop { [self] in
            engine.tracksInterfaces = true
            subscribe(engine.inventory())
        }
    }

    /// Whether a path leaves another way than the one before it is decided here, once,
    /// for the probe and the host name alike (as the daemon decides it: `Path.leavesTheSameWay`).
    /// Nothing else asks, so without either the path goes straight on: this is on the way
    /// from the kernel's message to every subscriber (BENCHMARKS.md §32).
    private func publish(_ evaluated: Path) {
        var path = evaluated
        if connectivity != nil || hostName != nil {
            let before = lastEvaluated
            lastEvaluated = evaluated
            let moved = before.map { !$0.leavesTheSameWay(as: evaluated) } ?? true
            if let connectivity {
                connectivity.observe(path, moved: moved)
                (path.connectivity, path.portal) = connectivity.state(of: path)
            }
            // Asked before the path is published, so whoever sees this path sees its lookup counted.
            if moved, before != nil { resolveAgain() }
        }
        if connectivity == nil, path.status.isReachable {
            path.connectivity = ConnectivityScheduler.unprobed(path, validated: false)
        }
        monitor?.publish(path, statistics: engine.statistics)
    }

    func startThread() throws {
        thread = try DedicatedThread(.monitor) { [self] in run() }
    }

    func stopAndWait() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        signalWake()
        thread?.join()
    }

    private func signalWake() { wake.signal() }

    /// Runs `body` on the loop's thread and waits for it (or at once, when no thread runs).
    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        guard let thread, !thread.isCurrent, !stopRequested.load(ordering: .sequentiallyConsistent) else { return body() }
        let done = DispatchSemaphore(value: 0)
        requests.withLock {
            $0.append({
                body(); done.signal()
            })
        }
        signalWake()
        done.wait()
    }

    private func run() {
        var descriptors = [
            pollfd(fd: engine.fileDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.readEnd.rawValue, events: Int16(POLLIN), revents: 0),
            pollfd(fd: resolvConf?.fileDescriptor.rawValue ?? -1, events: Int16(POLLIN), revents: 0)
        ]
        // Once on this thread before it first sleeps: what the loads learn once per thread (where
        // its stack ends) is learnt here, not in the first change's wake-up.
        ProgramPages.touchWakeUpLines()
        while !stopRequested.load(ordering: .sequentiallyConsistent) {
            // Sleep until told, unless the watcher's or the probe's timer is due.
            var timeout: Duration?
            for next in [watcherDue, probeDue].compactMap({ $0 }) {
                let remaining = max(.zero, ContinuousClock.now.duration(to: next))
                timeout = min(timeout ?? remaining, remaining)
            }
            // A signal's EINTR is retried with the same timeout: the loop's timers are read again after it.
            _ = retryingOnInterrupt { waitForReadable(&descriptors, timeout: timeout) }
            if stopRequested.load(ordering: .sequentiallyConsistent) { break }
            // A change after idle finds the caches cold: what it will run, loaded at once first.
            if descriptors[0].revents != 0 { ProgramPages.touchWakeUpLines() }
            var evaluate = false
            if descriptors[1].revents != 0 {
                wake.drain()
                for request in requests.withLock({ value in
                    defer { value = [] }; return value
                }) { request() }
                if let fresh = resolved.withLock({ value in
                    defer { value = nil }; return value
                }) {
                    let again = lookup == .runningThenAgain
                    lookup = .idle
                    if fresh != addresses {
                        addresses = fresh
                        evaluate = true
                    }
                    if again { resolveAgain() }
                }
                let verdicts = probed.withLock { value in
                    defer { value = [] }
                    return value
                }
                for (generation, verdict) in verdicts {
                    if connectivity?.finish(generation, verdict) == true {
                        monitor?.countProbe()
                        evaluate = true
                    }
                }
            }
            if let due = probeDue, ContinuousClock.now >= due {
                probeDue = nil
                connectivity?.timerFired()
            }
            if descriptors[2].revents != 0, let resolvConf, resolvConf.update() {
                engine.dnsServers = resolvConf.servers
                evaluate = true
            }
            if descriptors[0].revents != 0 { watcher.readable() }
            if let due = watcherDue, ContinuousClock.now >= due {
                watcherDue = nil
                watcher.timerFired()
            }
            if evaluate { watcher.evaluateNow() }
        }
    }

    /// Resolves the host name again: its path moved (left another way): a new network,
    /// or a VPN's DNS, often answers with other addresses. A move while a lookup runs
    /// is not dropped: that lookup asked the network before it, so another follows it.
    private func resolveAgain() {
        guard let host = hostName else { return }
        guard lookup == .idle else {
            lookup = .runningThenAgain
            return
        }
        lookup = .running
        monitor?.countResolution()
        DedicatedThread.detach(.lookup) { [self] in
            let fresh = (try? HostResolver.resolve(host)) ?? []
            resolved.withLock { $0 = fresh }
            signalWake()
        }
    }
}
