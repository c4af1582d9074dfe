import Dispatch
import IPAddresses
@_exported import ReachabilityClient
import Synchronization
import SystemCalls

/// Alamofire 5's `NetworkReachabilityManager`, on Linux: the same public API, so
/// that code written for Alamofire on Apple platforms compiles and behaves the
/// same with `import ReachabilityCompat` (Alamofire leaves the class out wherever
/// SystemConfiguration is missing).
///
/// ```swift
/// import ReachabilityCompat
///
/// let manager = NetworkReachabilityManager.default
/// manager?.startListening(onQueue: .main) { status in
///     print("Network Status Changed: \(status)")
/// }
/// ```
///
/// **Where the answers come from.** From the reachd daemon when one answers
/// (`ReachabilityClient`: the path the daemon publishes, or its `WatchPath()`
/// for a host), otherwise from an in-process `ReachabilityMonitor` on netlink —
/// decided at each `startListening` and at each read of ``status`` while not
/// listening; ``backend`` says which was used last. Either way the status is
/// the kernel's route, never a guess: `.unknown` until it is known.
///
/// **The same semantics as Alamofire's.** ``status`` is computed when read (before
/// `startListening` too); the listener is called once with the current status
/// when listening starts, then only when the status changes — not when an address
/// or a gateway changes; `stopListening()` forgets the status, so listening again
/// calls the listener again at once; a manager may be released while it listens.
/// The listener runs on the queue given, `.main` by default as in Alamofire: a
/// command-line program must run the main queue (`dispatchMain()`) or name another.
///
/// `.reachable(.ethernetOrWiFi)` is a `wifi` or `wired` path (loopback included, as
/// SystemConfiguration reports `localhost`); `.reachable(.cellular)` a `cellular` one.
open class NetworkReachabilityManager: @unchecked Sendable {
    /// Defines the various states of network reachability.
    public enum NetworkReachabilityStatus: Sendable, Equatable {
        /// It is unknown whether the network is reachable.
        case unknown
        /// The network is not reachable.
        case notReachable
        /// The network is reachable on the associated `ConnectionType`.
        case reachable(ConnectionType)

        /// Defines the various connection types detected by reachability flags.
        public enum ConnectionType: Sendable {
            /// The connection type is either over Ethernet or WiFi.
            case ethernetOrWiFi
            /// The connection type is a cellular connection.
            case cellular
        }

        /// The status of a reachd path.
        public init(_ path: Path) {
            switch path.status {
            case .unknown: self = .unknown
            case .unreachable: self = .notReachable
            case .wifi, .wired: self = .reachable(.ethernetOrWiFi)
            case .cellular: self = .reachable(.cellular)
            }
        }
    }

    /// A closure executed when the network reachability status changes. The closure takes a single argument: the
    /// network reachability status.
    public typealias Listener = @Sendable (NetworkReachabilityStatus) -> Void

    /// Default `NetworkReachabilityManager` for the default path and a `listenerQueue` of `.main`.
    public static let `default` = NetworkReachabilityManager()

    /// Where the answers come from (reachd's own addition to Alamofire's API).
    public typealias Backend = ReachabilityBackend

    // MARK: - Properties

    /// Whether the network is currently reachable.
    open var isReachable: Bool { isReachableOnCellular || isReachableOnEthernetOrWiFi }

    /// Whether the network is currently reachable over the cellular interface.
    open var isReachableOnCellular: Bool { status == .reachable(.cellular) }

    /// Whether the network is currently reachable over Ethernet or WiFi interface.
    open var isReachableOnEthernetOrWiFi: Bool { status == .reachable(.ethernetOrWiFi) }

    /// `DispatchQueue` on which reachability will update.
    public let reachabilityQueue = DispatchQueue(label: "io.reachd.ReachabilityCompat.reachabilityQueue")

    /// The current network reachability status: the latest one while listening,
    /// else computed now (a call to the daemon, or a netlink lookup).
    open var status: NetworkReachabilityStatus {
        if let latest = state.withLock({ $0.latest }) { return NetworkReachabilityStatus(latest) }
        return NetworkReachabilityStatus(currentPath())
    }

    /// Which source answered last: the daemon, or the in-process monitor.
    public var backend: Backend? { state.withLock { $0.backend } }

    /// The host name or address watched; nil for the default path.
    private let host: String?
    private let options: MonitorOptions
    private let endpoint: ReachabilityClient.Endpoint?
    /// How long a read of `status` waits for `host` to resolve.
    public let resolutionTimeout: Duration

    private struct State {
        var listener: Listener?
        var listenerQueue: DispatchQueue?
        var previousStatus: NetworkReachabilityStatus?
        /// The latest path while listening.
        var latest: Path?
        var backend: Backend?
        /// Ends the subscription.
        var stop: (@Sendable () -> Void)?
        /// Counts the listening sessions: a path of an earlier one is not delivered.
        var generation = 0
    }

    private let state = Mutex(State())

    // MARK: - Initialization

    /// Creates an instance with the specified host.
    ///
    /// - Note: The `host` value must *not* contain a scheme, just the hostname.
    ///
    /// - Parameters:
    ///   - host: Host used to evaluate network reachability. Must *not* include the scheme (e.g. `https`).
    ///     nil when it is neither a host name nor an IP address.
    public convenience init?(host: String) {
        self.init(host: host, endpoint: .automatic)
    }

    /// Creates an instance that monitors the default path (Alamofire's address 0.0.0.0:
    /// the general routing status of the device, both IPv4 and IPv6).
    public convenience init?() {
        self.init(host: nil, endpoint: .automatic)
    }

    /// A manager that asks the reachd daemon at `endpoint` (reachd's own addition to
    /// Alamofire's API): `ReachabilityClient.Endpoint("/run/user/1000/reachd/bus")` for a
    /// daemon run by a user, `nil` to monitor in this process only.
    ///
    /// - Parameters:
    ///   - host: The host whose path is watched, without a scheme; nil for the default path.
    ///     The manager is nil when it is neither a host name nor an IP address.
    ///   - endpoint: Where to ask the daemon first; nil: never ask one.
    ///   - options: What an in-process monitor watches, when no daemon answers.
    ///   - resolutionTimeout: How long a read of ``status`` may wait for `host` to resolve
    ///     (a resolver that gets no answer takes 5 s per server): past it, `.unknown`.
    public init?(
        host: String? = nil, endpoint: ReachabilityClient.Endpoint?, options: MonitorOptions = MonitorOptions(),
        resolutionTimeout: Duration = NetworkReachabilityManager.defaultResolutionTimeout
    ) {
        if let host, IPAddress(host) == nil, !HostResolver.isHostName(host) { return nil }
        self.host = host
        self.options = options
        self.endpoint = endpoint
        self.resolutionTimeout = resolutionTimeout
    }

    /// How long a read of ``status`` waits for a host name to resolve unless the manager was
    /// made with another `resolutionTimeout`: 2 s.
    public static let defaultResolutionTimeout = Duration.seconds(2)

    deinit {
        stopListening()
    }

    // MARK: - Listening

    /// Starts listening for changes in network reachability status.
    ///
    /// - Note: Stops and removes any existing listener.
    ///
    /// - Parameters:
    ///   - queue:    `DispatchQueue` on which to call the `listener` closure. `.main` by default.
    ///   - listener: `Listener` closure called when reachability changes.
    ///
    /// - Returns: `true` if listening was started successfully, `false` otherwise.
    @discardableResult
    open func startListening(
        onQueue queue: DispatchQueue = .main,
        onUpdatePerforming listener: @escaping Listener
    ) -> Bool {
        stopListening()
        guard let feed = PathFeed.open(host: host, interfaceTypes: Set(InterfaceType.allCases), options: options, endpoint: endpoint) else {
            return false
        }
        // The listener is in place before the first path can arrive: that path is its first call.
        let generation = state.withLock { state in
            state.generation += 1
            state.listenerQueue = queue
            state.listener = listener
            state.backend = feed.backend
            return state.generation
        }
        let task = Task { [weak self] in
            for await path in feed.paths {
                guard let self else { return }
                reachabilityQueue.async { self.notifyListener(path, generation: generation) }
            }
        }
        let stop: @Sendable () -> Void = {
            task.cancel()
            feed.stop()
        }
        let stillListening = state.withLock { state in
            guard state.generation == generation else { return false }
            state.stop = stop
            return true
        }
        // Stopped (or started again) from another thread meanwhile: nobody else will stop this subscription.
        if !stillListening { stop() }
        return true
    }

    /// Stops listening for changes in network reachability status.
    open func stopListening() {
        let stop = state.withLock { state in
            defer { state.stop = nil }
            state.listener = nil
            state.listenerQueue = nil
            state.previousStatus = nil
            state.latest = nil
            state.generation += 1
            return state.stop
        }
        stop?()
    }

    // MARK: - Internal - Listener Notification

    /// Calls the listener on its queue when the status differs from the one it was last given.
    private func notifyListener(_ path: Path, generation: Int) {
        let newStatus = NetworkReachabilityStatus(path)
        state.withLock { state in
            guard state.generation == generation else { return }
            state.latest = path
            guard state.previousStatus != newStatus else { return }
            state.previousStatus = newStatus
            let listener = state.listener
            state.listenerQueue?.async { listener?(newStatus) }
        }
    }

    /// The path now, from the daemon when it answers, else from netlink; `unknown` when neither
    /// can say — a host name that does not resolve within `resolutionTimeout` included.
    private func currentPath() -> Path {
        if let endpoint {
            let client = ReachabilityClient(endpoint: endpoint).blocking
            do throws(ReachabilityClient.Failure) {
                let path = if let host { try client.route(to: host, timeout: resolutionTimeout) } else { try client.currentPath() }
                state.withLock { $0.backend = .daemon }
                return path
            } catch {
                // A daemon that answered, or took longer than the caller allows, has said what it knows:
                // asking netlink would only resolve the name again.
                if !error.isNoDaemon {
                    state.withLock { $0.backend = .daemon }
                    return .unknown()
                }
            }
        }
        state.withLock { $0.backend = .inProcess }
        let target = host.map { ReachabilityMonitor.Target.host($0) } ?? .defaultPath
        return (try? ReachabilityMonitor.path(to: target, options: options, resolutionTimeout: resolutionTimeout)) ?? .unknown()
    }
}
