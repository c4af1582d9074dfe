import Dispatch
import FoundationEssentials
import Netlink
import Sockets
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The event loop of a `ReachabilityMonitor`: one thread that owns the engine,
/// polls the netlink socket (and a pipe for stop requests and name
/// resolutions), drains every queued event, then evaluates the path once.
/// It sleeps in `poll` with no timeout while the network is quiet; the only
/// timed wake-ups are the re-checks after an IPv4 route removal and, when a
/// connectivity probe is configured, its schedule.
package final class MonitorLoop: @unchecked Sendable {
    // Touched only by the loop thread once it runs (and by `start` before that).
    private let engine: PathEngine
    private var addresses: [IPAddress]
    private var resolutionKey: String?

    private let target: ReachabilityMonitor.Target
    private weak var monitor: ReachabilityMonitor?
    /// A pipe: the loop polls the read end; stop requests and resolutions write a byte.
    private let wake: (read: Int32, write: Int32)
    private let stopRequested = Atomic<Bool>(false)
    private let resolved = Mutex<[IPAddress]?>(nil)
    private var thread: DedicatedThread?
    private let resolving = Atomic<Bool>(false)
    /// nil without a probe URL. Its timer is `probeDue`; verdicts come back through `probed` and the pipe.
    private var connectivity: ConnectivityScheduler?
    private var probeDue: ContinuousClock.Instant?
    private let probed = Mutex<[(generation: Int, verdict: ConnectivityProbe.Verdict)]>([])

    init(engine: PathEngine, target: ReachabilityMonitor.Target, connectivity options: ConnectivityOptions,
         monitor: ReachabilityMonitor) throws {
        self.engine = engine
        self.target = target
        self.monitor = monitor
        addresses = Self.resolve(target)
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw NetlinkError.system(operation: "creating a wake-up pipe", errno: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        wake = (ends[0], ends[1])
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

    deinit {
        close(wake.read)
        close(wake.write)
    }

    /// The addresses a target stands for. A name that does not resolve stands for none.
    static func resolve(_ target: ReachabilityMonitor.Target) -> [IPAddress] {
        guard case let .host(host) = target else { return [] }
        if let literal = IPAddress(host) { return [literal] }
        return (try? HostResolver.resolve(host)) ?? []
    }

    package static func evaluate(_ engine: PathEngine, target: ReachabilityMonitor.Target, addresses: [IPAddress]) -> Path {
        switch target {
        case .defaultPath:
            return engine.evaluateDefaultPath()
        case let .host(host) where addresses.isEmpty:
            // The name does not resolve: if the network itself is down, that is the answer;
            // otherwise nobody knows the destination's path.
            let network = engine.evaluateDefaultPath()
            var path = network.status.isReachable ? .unknown(destination: host) : network
            path.destination = host
            path.interfaces = network.interfaces
            path.routes = []
            return path
        case let .host(host):
            return engine.evaluate(destination: host, addresses: addresses)
        }
    }

    func publishCurrentPath() {
        var path = Self.evaluate(engine, target: target, addresses: addresses)
        if let connectivity {
            connectivity.observe(path)
            (path.connectivity, path.portal) = connectivity.state(of: path)
        }
        if let published = monitor?.publish(path, statistics: engine.statistics) {
            resolveAgainIfNeeded(after: published)
        }
    }

    func startThread() throws {
        thread = try DedicatedThread { [self] in run() }
    }

    func stopAndWait() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        signalWake()
        thread?.join()
    }

    private func signalWake() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    private func run() {
        var descriptors = [pollfd(fd: engine.fileDescriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        var rechecks: [ContinuousClock.Instant] = []
        while !stopRequested.load(ordering: .sequentiallyConsistent) {
            // Sleep until told, unless a re-check is due, or the state is unknown
            // (then the dump is retried every second).
            var timeout: Duration? = engine.isSynchronized ? nil : .seconds(1)
            for next in [rechecks.first, probeDue].compactMap({ $0 }) {
                let remaining = max(.zero, ContinuousClock.now.duration(to: next))
                timeout = min(timeout ?? remaining, remaining)
            }
            let ready = waitForReadable(&descriptors, timeout: timeout)
            if ready < 0 && errno == EINTR { continue }
            if stopRequested.load(ordering: .sequentiallyConsistent) { break }
            var evaluate = false
            if descriptors[1].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 64)
                while read(wake.read, &bytes, bytes.count) > 0 {}
                if let fresh = resolved.withLock({ value in defer { value = nil }; return value }), fresh != addresses {
                    addresses = fresh
                    evaluate = true
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
            if descriptors[0].revents != 0 {
                let outcome = engine.processEvents()
                evaluate = evaluate || outcome.evaluate
                if outcome.recheck {
                    let now = ContinuousClock.now
                    rechecks = PathEngine.recheckDelays.map { now + $0 }
                }
            }
            if let due = rechecks.first, ContinuousClock.now >= due {
                rechecks.removeAll { $0 <= .now }
                evaluate = true
            }
            if !engine.isSynchronized {
                try? engine.resynchronize()
                evaluate = true
            }
            if evaluate { publishCurrentPath() }
        }
    }

    /// Resolves a host name again when its path moved (another status, interface or
    /// VPN): a new network, or a VPN's DNS, often answers with other addresses.
    private func resolveAgainIfNeeded(after path: Path) {
        guard case let .host(host) = target, IPAddress(host) == nil else { return }
        let key = "\(path.status)|\(path.interface?.name ?? "")|\(path.vpn?.name ?? "")"
        defer { resolutionKey = key }
        guard resolutionKey != nil, key != resolutionKey, !resolving.exchange(true, ordering: .sequentiallyConsistent) else {
            return
        }
        DispatchQueue.global().async { [self] in
            let fresh = (try? HostResolver.resolve(host)) ?? []
            resolved.withLock { $0 = fresh }
            resolving.store(false, ordering: .sequentiallyConsistent)
            signalWake()
        }
    }
}
