import Dispatch
import ReachabilityClient
import Synchronization

/// Apple's `NWPathMonitor` (the Network framework), on Linux: the same API, so that
/// code written for it compiles and behaves the same with `import ReachabilityCompat`
/// in place of `import Network`.
///
/// ```swift
/// import Dispatch
/// import ReachabilityCompat
///
/// let monitor = NWPathMonitor()
/// monitor.pathUpdateHandler = { path in
///     print(path.status == .satisfied ? "online" : "offline", path.availableInterfaces.map(\.name))
/// }
/// monitor.start(queue: DispatchQueue(label: "network"))
/// ```
///
/// **Where the answers come from.** The reachd daemon when one answers, else a
/// monitor in this process (``backend`` says which), as ``NetworkReachabilityManager``.
///
/// **Apple's semantics.** `pathUpdateHandler` runs on the queue given to
/// ``start(queue:)``: first with the current path, then each time the path changes
/// in a way an ``NWPath`` shows (not for an address or connectivity alone).
/// ``currentPath`` is the latest path. A cancelled monitor cannot be started again;
/// a second `start` is ignored. Where Linux differs: `status` is `.requiresConnection`
/// while reachd cannot say (its `unknown`), `unsatisfiedReason` is always `.notAvailable`,
/// `isConstrained` always false; ``NWPath/reachdPath`` has reachd's whole answer.
public final class NWPathMonitor: @unchecked Sendable {
    private struct State {
        var handler: (@Sendable (NWPath) -> Void)?
        var queue: DispatchQueue?
        var current: NWPath
        var backend: ReachabilityBackend?
        var cancelled = false
        /// The handler was called once: later paths go to it only when they differ.
        var delivered = false
        var stop: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>
    private let interfaceTypes: Set<InterfaceType>
    private let endpoint: ReachabilityClient.Endpoint?
    private let options: MonitorOptions

    /// A monitor of the default path, whatever interface it leaves by.
    public convenience init() {
        self.init(endpoint: .automatic)
    }

    /// A monitor of the paths that leave by one type of interface: "can I get out by Wi-Fi?".
    /// `.loopback` and `.other` carry no path on Linux: such a monitor's path is unsatisfied.
    public convenience init(requiredInterfaceType: NWInterface.InterfaceType) {
        self.init(interfaceTypes: Self.types(requiredInterfaceType).map { [$0] } ?? [], endpoint: .automatic)
    }

    /// A monitor of the paths that avoid some types of interface: "can I get out without cellular?".
    public convenience init(prohibitedInterfaceTypes: [NWInterface.InterfaceType]) {
        self.init(
            interfaceTypes: Set(InterfaceType.allCases).subtracting(prohibitedInterfaceTypes.compactMap(Self.types)), endpoint: .automatic)
    }

    /// A monitor that asks the reachd daemon at `endpoint` (reachd's own addition):
    /// `ReachabilityClient.Endpoint("/run/user/1000/reachd/bus")` for a daemon run by a
    /// user, nil to monitor in this process only.
    /// - Parameters:
    ///   - interfaceTypes: The interface types the path may leave by; all by default.
    ///   - endpoint: Where to ask the daemon first; nil: never ask one.
    ///   - options: What an in-process monitor watches, when no daemon answers.
    public init(
        interfaceTypes: Set<InterfaceType> = Set(InterfaceType.allCases), endpoint: ReachabilityClient.Endpoint?,
        options: MonitorOptions = MonitorOptions()
    ) {
        self.interfaceTypes = interfaceTypes
        self.endpoint = endpoint
        self.options = options
        state = Mutex(State(current: NWPath(.unknown())))
    }

    private static func types(_ type: NWInterface.InterfaceType) -> InterfaceType? {
        switch type {
        case .wifi: .wifi
        case .wiredEthernet: .wired
        case .cellular: .cellular
        case .loopback, .other: nil
        }
    }

    deinit {
        cancel()
    }

    /// Called on the monitor's queue with the current path once started, then with each change.
    public var pathUpdateHandler: (@Sendable (NWPath) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    /// The latest path: `.requiresConnection` until the first one is known.
    public var currentPath: NWPath { state.withLock { $0.current } }

    /// The queue given to ``start(queue:)``.
    public var queue: DispatchQueue? { state.withLock { $0.queue } }

    /// Where the paths come from, once started: the daemon or this process (reachd's own addition).
    public var backend: ReachabilityBackend? { state.withLock { $0.backend } }

    /// Starts watching, and returns at once: `pathUpdateHandler` runs on `queue`. Ignored on a
    /// monitor already started or cancelled. With neither a daemon nor netlink, the path stays `.requiresConnection`.
    public func start(queue: DispatchQueue) {
        let starting = state.withLock { state -> Bool in
            guard state.queue == nil, !state.cancelled else { return false }
            state.queue = queue
            return true
        }
        guard starting else { return }
        // Choosing where the paths come from asks the daemon (a connect and a Describe()):
        // off the caller's thread, as Apple's start returns at once.
        Task.detached { [weak self, interfaceTypes, options, endpoint] in
            guard let feed = PathFeed.open(host: nil, interfaceTypes: interfaceTypes, options: options, endpoint: endpoint) else { return }
            guard let self,
                state.withLock({ state -> Bool in
                    guard !state.cancelled else { return false }
                    state.backend = feed.backend
                    return true
                })
            else { return feed.stop() }
            let task = Task { [weak self] in
                for await path in feed.paths {
                    guard let self else { return }
                    deliver(NWPath(path))
                }
            }
            let stop: @Sendable () -> Void = {
                task.cancel()
                feed.stop()
            }
            let running = state.withLock { state -> Bool in
                guard !state.cancelled else { return false }
                state.stop = stop
                return true
            }
            if !running { stop() }
        }
    }

    /// Stops watching for good: the handler is not called again.
    public func cancel() {
        let stop = state.withLock { state in
            state.cancelled = true
            state.handler = nil
            defer { state.stop = nil }
            return state.stop
        }
        stop?()
    }

    /// Hands `path` to the handler on the monitor's queue when it differs from the current one,
    /// or is the first.
    private func deliver(_ path: NWPath) {
        state.withLock { state in
            guard !state.cancelled, !state.delivered || state.current != path else { return }
            state.current = path
            state.delivered = true
            let handler = state.handler
            state.queue?.async { handler?(path) }
        }
    }
}
