import Dispatch
import FoundationEssentials
import IPAddresses
import Synchronization
import SystemCalls

/// Watches the kernel's network state and publishes the path every time it changes.
///
/// ```swift
/// import Reachability
///
/// let monitor = ReachabilityMonitor()
/// try monitor.start()
/// for await path in monitor.paths {
///     print(path.status, path.interface?.name ?? "-")
/// }
/// ```
///
/// Every subscriber — the `onChange` handler, each `paths` stream, and (with
/// `import Reachability`) NotificationCenter observers of
/// `pathDidChangeNotification` — first receives
/// the current path with `initial == true`, then one path per real change
/// (a change of any field but `since` and `initial`). Bursts of kernel events
/// are coalesced: every queued event is read before the path is evaluated once.
public final class ReachabilityMonitor: Sendable {
    /// What a monitor watches.
    public enum Target: Sendable, Hashable, CustomStringConvertible {
        /// The default path: the kernel's route to the configured probe addresses.
        case defaultPath
        /// The path to one host name or address. A name is resolved again when its path leaves another way
        /// (`Path.leavesTheSameWay`: another status, interface, next hop, tunnel or address family).
        case host(String)

        public var description: String {
            switch self {
            case .defaultPath: "the default path"
            case let .host(host): host
            }
        }
    }

    /// Called on the callback queue with each published path, marked `initial` on each
    /// monitor's first. The `Reachability` module posts NotificationCenter notifications
    /// through it; this module stays free of full Foundation (about 6 MB of RSS), so
    /// reachctl and reachd do not pay for notifications nobody observes.
    package static let publishObserver = Mutex<(@Sendable (ReachabilityMonitor, Path) -> Void)?>(nil)

    /// What the monitor watches and how: probe addresses, ignored and metered interfaces, the namespace.
    public let options: MonitorOptions
    /// Whose path: the default path, or one host's.
    public let target: Target
    /// The in-process connectivity probe; without a `uri` (the default) nothing is
    /// contacted and `Path.connectivity` stays `unknown` — `limited` when no
    /// configured resolver can be reached by the path (``Path/supportsDNS``).
    public let connectivity: ConnectivityOptions
    /// The interface types the path may leave by: all of them, unless the monitor was
    /// made with ``init(requiredInterfaceType:target:options:connectivity:)`` or
    /// ``init(prohibitedInterfaceTypes:target:options:connectivity:)``.
    public let allowedInterfaceTypes: Set<InterfaceType>
    private let shared = Mutex(Shared())

    private struct Shared: ~Copyable {
        var loop: MonitorLoop?
        var current: Path?
        var queue = DispatchQueue(label: "io.reachd.ReachabilityMonitor.callbacks")
        var handler: (@Sendable (Path) -> Void)?
        var inlineHandler: (@Sendable (Path) -> Void)?
        var handlerHasInitial = false
        var notificationsHaveInitial = false
        var streams = PathStreams()
        var interfaceStreams: [UInt64: InterfaceChangeStream.Buffer] = [:]
        var nextStreamID: UInt64 = 0
        var statistics = Statistics()
    }

    /// Counters of the event side, for diagnostics.
    public struct Statistics: Sendable, Equatable {
        /// Kernel messages that mattered.
        public var messages = 0
        /// Receive-buffer overruns (`ENOBUFS`), each answered with a full re-dump.
        public var overruns = 0
        /// Full dumps of links and addresses, start-up included.
        public var dumps = 0
        /// Paths published.
        public var published = 0
        /// Connectivity probe verdicts taken (each covers every family the path has).
        public var probes = 0
        /// Times a monitor of a host name looked the name up again because its path left another way.
        public var resolutions = 0
    }

    /// A monitor; nothing is watched until ``start(queue:)``.
    ///
    /// - Parameters:
    ///   - options: Probe addresses, ignored and metered interfaces, the network namespace.
    ///   - target: The default path, or one host's.
    ///   - connectivity: Opt-in: with a `uri`, the path's `connectivity` and
    ///     `portal` come from the same HTTP probe reachd runs (docs/connectivity.md),
    ///     sent over the path's interface when the way out changes, then on its schedule.
    ///   - allowedInterfaceTypes: The interface types the path may leave by (docs/path.md,
    ///     "Restricting the path"); all by default.
    public init(
        options: MonitorOptions = MonitorOptions(), target: Target = .defaultPath,
        connectivity: ConnectivityOptions = ConnectivityOptions(),
        allowedInterfaceTypes: Set<InterfaceType> = Set(InterfaceType.allCases)
    ) {
        self.options = options
        self.target = target
        self.connectivity = connectivity
        self.allowedInterfaceTypes = allowedInterfaceTypes
    }

    /// A monitor of the paths that leave by one type of interface, like
    /// `NWPathMonitor(requiredInterfaceType:)`: "can I get out by Wi-Fi?". The path is
    /// the kernel's best route through an interface of that type, whatever the
    /// default route says; `unreachable` when there is none.
    public convenience init(
        requiredInterfaceType: InterfaceType, target: Target = .defaultPath,
        options: MonitorOptions = MonitorOptions(), connectivity: ConnectivityOptions = ConnectivityOptions()
    ) {
        self.init(options: options, target: target, connectivity: connectivity, allowedInterfaceTypes: [requiredInterfaceType])
    }

    /// A monitor of the paths that avoid some types of interface, like
    /// `NWPathMonitor(prohibitedInterfaceTypes:)`: "can I get out without cellular?".
    public convenience init(
        prohibitedInterfaceTypes: [InterfaceType], target: Target = .defaultPath,
        options: MonitorOptions = MonitorOptions(), connectivity: ConnectivityOptions = ConnectivityOptions()
    ) {
        self.init(
            options: options, target: target, connectivity: connectivity,
            allowedInterfaceTypes: Set(InterfaceType.allCases).subtracting(prohibitedInterfaceTypes))
    }

    /// A monitor of the path to one host name or address.
    public convenience init(
        host: String, options: MonitorOptions = MonitorOptions(),
        connectivity: ConnectivityOptions = ConnectivityOptions()
    ) {
        self.init(options: options, target: .host(host), connectivity: connectivity)
    }

    deinit { stop() }

    /// Starts watching. When it returns, `currentPath` is set and the first path
    /// has been handed to the subscribers. Starting a running monitor does nothing;
    /// a stopped one can be started again.
    ///
    /// For a `.host` target, the name is resolved before this returns.
    /// - Parameter queue: where `onChange` and notifications are delivered (a private serial queue by default).
    /// - Throws: when netlink cannot be opened (or the network namespace does not exist).
    public func start(queue: DispatchQueue? = nil) throws {
        if isRunning { return }
        let engine = try PathEngine(options: options)
        let loop = try MonitorLoop(engine: engine, target: target, connectivity: connectivity, monitor: self)
        let started = shared.withLock { shared -> Bool in
            guard shared.loop == nil else { return false }
            shared.loop = loop
            if let queue { shared.queue = queue }
            shared.handlerHasInitial = false
            shared.notificationsHaveInitial = false
            return true
        }
        guard started else { return }
        loop.publishCurrentPath()
        do {
            try loop.startThread()
        } catch {
            stop()
            throw error
        }
    }

    /// Starts watching, handing each published path to `handler` on the thread that
    /// publishes it, before any stream or queue sees it: the first path (marked `initial`)
    /// on the thread calling this, every change after it on the monitor's own thread.
    ///
    /// For a consumer whose whole work is a `write(2)`: `reachctl watch --direct` prints
    /// from here, because the hop to another thread was most of what it added to
    /// `ip monitor`'s latency (BENCHMARKS.md §28). The handler holds up the monitor while it
    /// runs; a handler that blocks delays every later path, and the kernel's messages
    /// overrun meanwhile (the monitor reads the state again after). As with `start()`, a
    /// running monitor is left as it is: the handler is not installed.
    package func start(deliveringInline handler: @escaping @Sendable (Path) -> Void) throws {
        let installed = shared.withLock { shared in
            guard shared.loop == nil else { return false }
            shared.inlineHandler = handler
            return true
        }
        guard installed else { return }
        do {
            try start()
        } catch {
            shared.withLock { $0.inlineHandler = nil }
            throw error
        }
    }

    /// Stops watching: no more deliveries, `paths` streams finish, `currentPath` becomes nil.
    public func stop() {
        let (loop, streams, interfaceStreams) = shared.withLock { shared in
            let loop = shared.loop
            shared.loop = nil
            shared.current = nil
            shared.inlineHandler = nil
            let streams = shared.streams.removeAll()
            let interfaceStreams = Array(shared.interfaceStreams.values)
            shared.interfaceStreams.removeAll()
            return (loop, streams, interfaceStreams)
        }
        loop?.stopAndWait()
        streams.forEach { $0.finish() }
        interfaceStreams.forEach { $0.finish() }
    }

    /// Between `start` and `stop`.
    public var isRunning: Bool { shared.withLock { $0.loop != nil } }

    /// The latest path; nil when the monitor is not running.
    public var currentPath: Path? { shared.withLock { $0.current } }

    /// The event side's counters since the monitor was created.
    public var statistics: Statistics { shared.withLock { $0.statistics } }

    /// Called on the callback queue with the current path (`initial`) and every change after it.
    public var onChange: (@Sendable (Path) -> Void)? {
        get { shared.withLock { $0.handler } }
        set {
            let pending = shared.withLock { shared -> (DispatchQueue, Path)? in
                shared.handler = newValue
                shared.handlerHasInitial = false
                guard newValue != nil, var current = shared.current else { return nil }
                shared.handlerHasInitial = true
                current.initial = true
                return (shared.queue, current)
            }
            if let (queue, path) = pending, let newValue { queue.async { newValue(path) } }
        }
    }

    /// A new stream of paths: the current one (`initial`) — or, asked for before
    /// `start()`, the first one — then every change, until the monitor stops.
    ///
    /// The stream holds state, not history: a consumer that reads slower than the
    /// path changes skips the paths it had no time for, and always gets the latest
    /// (the first it reads is marked `initial` all the same). Having skipped a change
    /// and its undoing, it may read the path it already had.
    public var paths: AsyncStream<Path> {
        let (stream, continuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(1))
        shared.withLock { shared in
            let id = shared.streams.add(continuation, current: shared.current)
            continuation.onTermination = { [weak self] _ in self?.shared.withLock { $0.streams.remove(id) } }
        }
        return stream
    }

    /// A new stream of the interfaces: every interface first (the inventory, each
    /// entry marked `initial`), then each interface that changes, removed ones
    /// included, until the monitor stops — the in-process form of
    /// `reachctl watch --interfaces --direct` (docs/path.md, "Available interfaces").
    ///
    /// The path's ``Path/interfaces`` lists only the interfaces that could carry a
    /// path; this lists all of them, bridge ports and pod veths included, and costs
    /// nothing while nobody iterates one. Ask for it after ``start(queue:)``: the
    /// stream of a monitor that is not running ends at once.
    public var interfaceChanges: InterfaceChangeStream {
        let id = shared.withLock { shared in
            shared.nextStreamID += 1
            return shared.nextStreamID
        }
        let stream = InterfaceChangeStream { [weak self] in self?.removeInterfaceStream(id) }
        guard let loop = shared.withLock({ $0.loop }) else {
            stream.buffer.finish()
            return stream
        }
        // On the loop's thread: no change can fall between the inventory and the first delta.
        loop.subscribeInterfaces { [weak self] inventory in
            guard let self else { return stream.buffer.finish() }
            let running = shared.withLock { shared -> Bool in
                guard shared.loop != nil else { return false }
                shared.interfaceStreams[id] = stream.buffer
                return true
            }
            guard running else { return stream.buffer.finish() }
            for var entry in inventory {
                entry.initial = true
                stream.buffer.put(entry)
            }
        }
        return stream
    }

    private func removeInterfaceStream(_ id: UInt64) {
        let (loop, none) = shared.withLock { shared in
            shared.interfaceStreams[id] = nil
            return (shared.loop, shared.interfaceStreams.isEmpty)
        }
        if none { loop?.trackInterfaces(false) }
    }

    /// Called by the loop with the interfaces a batch of events changed.
    func publish(interfaceChanges: [InterfaceChange]) {
        let buffers = shared.withLock { Array($0.interfaceStreams.values) }
        for buffer in buffers {
            for change in interfaceChanges { buffer.put(change) }
        }
    }

    /// Computes the path once, without watching: what `reachctl status --direct` prints.
    /// - Throws: when netlink cannot be opened, or a `.host` name does not resolve within
    ///   `resolutionTimeout` (a running monitor reports that as `unknown` instead, and keeps trying).
    /// - Parameters:
    ///   - target: The default path, or one host's.
    ///   - options: Probe addresses, ignored and metered interfaces, the namespace, the resolv.conf.
    ///   - allowedInterfaceTypes: The interface types the path may leave by.
    ///   - resolutionTimeout: How long the calling thread may wait for the system resolver
    ///     to resolve a host name (one that gets no answer takes 5 s per configured server).
    public static func path(
        to target: Target = .defaultPath, options: MonitorOptions = MonitorOptions(),
        allowedInterfaceTypes: Set<InterfaceType> = Set(InterfaceType.allCases),
        resolutionTimeout: Duration = .seconds(5)
    ) throws -> Path {
        let engine = try PathEngine(options: options)
        engine.dnsServers = options.resolvConf.map { DNSServers.read(resolvConf: $0) }
        var addresses: [IPAddress] = []
        if case let .host(host) = target { addresses = try HostResolver.resolve(host, timeout: resolutionTimeout) }
        var path = MonitorLoop.evaluate(engine, target: target, addresses: addresses, allowed: allowedInterfaceTypes)
        path.initial = true
        return path
    }

    /// The path to one host name or address, once, without watching: `path(to: .host(host))`.
    /// - Throws: when netlink cannot be opened, or the name does not resolve within `resolutionTimeout`.
    /// - Parameters:
    ///   - host: A host name or an IP address.
    ///   - options: Probe addresses, ignored and metered interfaces, the namespace, the resolv.conf.
    ///   - allowedInterfaceTypes: The interface types the path may leave by.
    ///   - resolutionTimeout: How long the calling thread may wait for the system resolver.
    public static func path(
        to host: String, options: MonitorOptions = MonitorOptions(),
        allowedInterfaceTypes: Set<InterfaceType> = Set(InterfaceType.allCases),
        resolutionTimeout: Duration = .seconds(5)
    ) throws -> Path {
        try path(to: .host(host), options: options, allowedInterfaceTypes: allowedInterfaceTypes, resolutionTimeout: resolutionTimeout)
    }

    /// Reads every interface once, without watching: what `reachctl status --interfaces --direct` prints.
    /// - Throws: when netlink cannot be opened.
    public static func interfaces(options: MonitorOptions = MonitorOptions()) throws -> [InterfaceChange] {
        try PathEngine(options: options).inventory()
    }

    // MARK: Publishing (called by the loop)

    func countProbe() { shared.withLock { $0.statistics.probes += 1 } }

    func countResolution() { shared.withLock { $0.statistics.resolutions += 1 } }

    /// The handler of ``start(deliveringInline:)``, and whether its next path is its first.
    private struct Inline {
        let handler: @Sendable (Path) -> Void
        let initial: Bool
    }

    /// Where one published path goes, gathered under the lock and delivered outside it.
    /// A struct, not a tuple: the runtime copies a tuple of this size through its metadata.
    private struct Publication {
        let path: Path
        let inline: Inline?
        let queue: DispatchQueue
        let handler: (@Sendable (Path) -> Void)?
        let handlerInitial: Bool
        let notificationInitial: Bool
        let streams: [PathStreams.Delivery]

        /// The path, marked as its receiver's first when it is.
        func path(initial: Bool) -> Path {
            guard initial else { return path }
            var copy = path
            copy.initial = true
            return copy
        }
    }

    /// Publishes `candidate` if it differs from the current path.
    func publish(_ candidate: Path, statistics engineStatistics: PathEngine.Statistics) {
        let publication = shared.withLock { shared -> Publication? in
            shared.statistics.messages = engineStatistics.messages
            shared.statistics.overruns = engineStatistics.overruns
            shared.statistics.dumps = engineStatistics.dumps
            guard shared.loop != nil, let path = candidate.succeeding(shared.current) else { return nil }
            let inline = shared.inlineHandler.map { Inline(handler: $0, initial: shared.current == nil) }
            shared.current = path
            shared.statistics.published += 1
            defer {
                shared.handlerHasInitial = true
                shared.notificationsHaveInitial = true
            }
            return Publication(
                path: path, inline: inline, queue: shared.queue, handler: shared.handler,
                handlerInitial: !shared.handlerHasInitial, notificationInitial: !shared.notificationsHaveInitial,
                streams: shared.streams.deliveries())
        }
        guard let publication else { return }
        if let inline = publication.inline { inline.handler(publication.path(initial: inline.initial)) }
        for stream in publication.streams { stream.send(publication.path) }
        let observer = Self.publishObserver.withLock { $0 }
        // Waking the callback queue for nobody costs a thread hop per change.
        guard publication.handler != nil || observer != nil else { return }
        publication.queue.async { [self] in
            publication.handler?(publication.path(initial: publication.handlerInitial))
            observer?(self, publication.path(initial: publication.notificationInitial))
        }
    }
}
