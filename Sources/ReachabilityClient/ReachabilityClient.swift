import CSystemd
import Dispatch
import FoundationEssentials
import ReachabilityContract
@_exported import ReachabilityCore
import SDBus
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The current network path from the reachd daemon, for Swift apps: read it,
/// subscribe to it (AsyncStream or a callback), ask for one destination's path
/// or the trust verdicts — the same `Path` type as the `Reachability` library.
///
/// The client finds the daemon by its bus name, then on its private socket. Its
/// calls and all its streams share one connection, opened by the first of them and
/// closed when the client is released: keep one client rather than making one per call.
/// Subscriptions survive the daemon restarting or the bus going away: the
/// client reconnects with back-off, re-reads the path, and delivers it if it
/// changed meanwhile, so a subscriber never stays on a stale state.
public final class ReachabilityClient: Sendable {
    /// Where to look for the daemon.
    public enum Endpoint: Sendable, Equatable {
        /// The bus name on the system bus, then the private socket at its default place.
        case automatic
        /// The bus name on the system or session bus, or a D-Bus address
        /// (`unix:path=/run/reachd/bus` reaches the private socket).
        case system, session
        /// A D-Bus address: `unix:path=/run/reachd/bus` is the daemon's private socket.
        case address(String)

        /// `system`, `session`, a D-Bus address (`unix:path=…`), or a socket path.
        public init(_ text: String) {
            switch BusConnection.Endpoint(text) {
            case .system: self = .system
            case .session: self = .session
            case let .address(address): self = .address(address)
            }
        }
    }

    /// Where this client looks for the daemon.
    public let endpoint: Endpoint
    /// Back-off between reconnection attempts: doubles from the first to the last.
    public let reconnectDelays: (first: Duration, last: Duration)

    /// A client; nothing connects until the first call or subscription.
    ///
    /// - Parameters:
    ///   - endpoint: Where to look for the daemon.
    ///   - reconnectDelays: The first and the longest wait between reconnection
    ///     attempts of a subscription; each wait doubles the one before.
    public init(endpoint: Endpoint = .automatic, reconnectDelays: (first: Duration, last: Duration) = (.milliseconds(100), .seconds(5))) {
        self.endpoint = endpoint
        self.reconnectDelays = reconnectDelays
        connection = Connection(endpoint: endpoint, reconnectDelays: reconnectDelays)
        connection.client = self
    }

    /// Where the private socket is: the system service's, else where a daemon
    /// run by this user puts it (docs/api.md).
    public static var defaultSocketPath: String {
        access("/run/reachd/bus", F_OK) == 0 ? "/run/reachd/bus" : PrivateSocketPlace.defaultPath
    }

    /// Why the daemon could not answer.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
        /// No daemon answered at all (rather than one that answered with an error).
        public let isNoDaemon: Bool

        init(description: String, isNoDaemon: Bool = false) {
            self.description = description
            self.isNoDaemon = isNoDaemon
        }
    }

    /// How many paths a `paths` stream holds for a consumer that does not keep up
    /// (as `ReachabilityMonitor.paths`): the latest only.
    public static let bufferedPaths = 1

    static func decode(_ document: String) throws(Failure) -> Path {
        do {
            return try Path(json: document)
        } catch {
            throw Failure(description: "the daemon's path document does not parse: \(error)")
        }
    }

    static func decodeInterfaces(_ document: String) throws(Failure) -> [InterfaceChange] {
        do {
            return try InterfaceChange.decodeArray(document)
        } catch {
            throw Failure(description: "the daemon's interfaces do not parse: \(error)")
        }
    }

    static func decodeConnectivity(_ answer: String) throws(Failure) -> Connectivity {
        guard let state = Connectivity(rawValue: answer) else {
            throw Failure(description: "the daemon answered CheckConnectivity with \"\(answer)\"")
        }
        return state
    }

    static func decodeTrust(_ document: String) throws(Failure) -> TrustStatus {
        do {
            return try TrustStatus(json: document)
        } catch {
            throw Failure(description: "the daemon's trust status does not parse: \(error)")
        }
    }

    /// The one connection to the daemon, for calls and streams alike.
    let connection: Connection

    /// Calls a method of the daemon's object and hands its answer to `done`, on the
    /// connection's thread; past `timeout` the call fails.
    func call(
        _ method: ReachabilityContract.Method, _ arguments: [String], timeout: Duration,
        done: @escaping @Sendable (Result<String, Failure>) -> Void
    ) {
        connection.send(Connection.Call(request: Request(method: method, arguments: arguments), timeout: timeout, done: done))
    }

    /// The same, waiting on the calling thread.
    func call(_ method: ReachabilityContract.Method, _ arguments: String..., timeout: Duration = .seconds(25)) throws(Failure) -> String {
        let answered = DispatchSemaphore(value: 0)
        let result = Mutex<Result<String, Failure>?>(nil)
        call(method, arguments, timeout: timeout) { answer in
            result.withLock { $0 = answer }
            answered.signal()
        }
        answered.wait()
        return try result.withLock { $0! }.get()
    }

    /// The same, for `async` code: no thread waits meanwhile.
    func call(
        _ method: ReachabilityContract.Method, _ arguments: String..., timeout: Duration = .seconds(25)
    ) async throws(Failure) -> String {
        let result = await withCheckedContinuation { continuation in
            call(method, arguments, timeout: timeout) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    deinit { connection.stop() }

    // MARK: Subscriptions

    private struct Subscribers {
        /// Stream ids come from `streams`; callbacks and connection streams take theirs from `nextID`, which counts down.
        var streams = PathStreams()
        var callbacks: [Int: (DispatchQueue, @Sendable (Path) -> Void)] = [:]
        var connectionStreams: [Int: AsyncStream<ConnectionState>.Continuation] = [:]
        var nextID = 0
        /// What the connection follows for them while any is subscribed.
        var follow: Follow?
        /// The path last delivered: a subscriber that joins starts with it.
        var current: Path?
        var connection = ConnectionState.looking
        var isEmpty: Bool { streams.isEmpty && callbacks.isEmpty && connectionStreams.isEmpty }

        mutating func newID() -> Int {
            nextID -= 1
            return nextID
        }

        /// Adds a callback; it is handed the current path at once (marked initial), if there is one.
        mutating func add(callback queue: DispatchQueue, _ handler: @escaping @Sendable (Path) -> Void) -> Int {
            let id = newID()
            callbacks[id] = (queue, handler)
            if var first = current {
                first.initial = true
                let marked = first
                queue.async { handler(marked) }
            }
            return id
        }
    }

    private let subscribers = Mutex(Subscribers())

    /// The current path (marked initial), then every change. Ends when the task is cancelled.
    ///
    /// The stream holds state, not history: a consumer that keeps up gets every
    /// change; one that reads slower skips the paths it had no time for, and the
    /// latest path is always the last it gets (the first it reads is marked
    /// `initial` all the same).
    public var paths: AsyncStream<Path> {
        AsyncStream(bufferingPolicy: .bufferingNewest(Self.bufferedPaths)) { continuation in
            let id = subscribers.withLock { $0.streams.add(continuation, current: $0.current) }
            continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
            followPathsIfNeeded()
        }
    }

    /// Every interface (each entry marked `initial`), then each interface that
    /// changes, removed ones included: the daemon's `WatchInterfaces()` and
    /// `InterfaceChanged` (docs/api.md). The path's `Path.interfaces` lists only
    /// the interfaces that could carry a path; this is for the rest (bridge ports,
    /// pod veths, interfaces that are down), and only a subscriber of it is sent them.
    ///
    /// It holds the latest entry per interface for a consumer that falls behind,
    /// never a queue, and survives the daemon restarting. Ends when the consuming
    /// task is cancelled.
    public var interfaceChanges: InterfaceChangeStream {
        let box = FollowBox()
        // The stream holds the client (and so its connection) until the consumer leaves.
        let stream = InterfaceChangeStream { [self] in box.follow.map(connection.remove) }
        let follow = Self.interfaceFollow(stream.buffer)
        box.follow = follow
        connection.add(follow)
        return stream
    }

    /// Where a stream's termination finds the follow made after the stream was.
    private final class FollowBox: @unchecked Sendable {
        var follow: Follow?
    }

    /// A stream that `follow` feeds on the client's connection; the consumer leaving ends it.
    /// The stream holds the client (and so its connection) until then.
    private func stream<Element>(_ follow: (AsyncStream<Element>.Continuation) -> Follow) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(1))
        let follow = follow(continuation)
        continuation.onTermination = { [self] _ in connection.remove(follow) }
        connection.add(follow)
        return stream
    }

    /// The path to one destination, or the default path, leaving only by some
    /// interface types — the daemon's `WatchPath()` (docs/api.md): the current path
    /// (marked initial), then every change, until the consuming task ends.
    ///
    /// `client.paths(to: "api.example.com")` follows one server's path (a VPN that
    /// routes only it, a specific route) as the daemon evaluates it on every kernel
    /// change; `client.paths(interfaceTypes: [.wifi, .wired])` asks NWPathMonitor's
    /// question, "can I leave without cellular?". The daemon re-resolves a name when
    /// the default path leaves another way. Each stream holds one watch of at most
    /// eight per connection; it survives the daemon restarting, like ``paths``.
    ///
    /// - Parameters:
    ///   - destination: A host name or IP address; nil for the default path.
    ///   - interfaceTypes: The types the path may leave by; all by default.
    public func paths(
        to destination: String? = nil,
        interfaceTypes: Set<InterfaceType> = Set(InterfaceType.allCases)
    ) -> AsyncStream<Path> {
        let request = PathWatchRequest(destination: destination ?? "", interfaceTypes: interfaceTypes)
        return stream { Self.watchFollow(request, $0) }
    }

    /// The path documents as the daemon wrote them — what ``paths`` decodes — the current one
    /// first (marked `"initial":true`), then each that changes the path: `reachctl watch --json`.
    package var pathDocuments: AsyncStream<String> { stream(Self.documentFollow) }

    /// The trust verdicts: the latest round first, then each round whose outcome
    /// differs (`TrustChanged`), until the consuming task ends. Empty hosts and
    /// `overall == .none` without trust hosts configured.
    public var trustChanges: AsyncStream<TrustStatus> { stream(Self.trustFollow) }

    /// Every pin failure the daemon reports from now on (`PinFailure`), typed:
    /// events, not state — nothing is sent for failures before the subscription,
    /// and a consumer that falls behind keeps the latest. The reports themselves
    /// are on disk in the daemon's spool (docs/trust.md).
    public var pinFailures: AsyncStream<PinFailure> { stream(Self.pinFailureFollow) }

    // MARK: Changes of one value

    /// The distinct values of one key path of the daemon's path, the current one
    /// first: `client.changes(of: \.status)` is silent while only addresses or
    /// gateways move. Use ``paths`` for the whole document.
    public func changes<Value: Equatable & Sendable>(of keyPath: KeyPath<Path, Value> & Sendable) -> AsyncStream<Value> {
        PathChanges.values(of: keyPath, in: paths)
    }

    /// The status alone: `changes(of: \.status)`.
    public var statusChanges: AsyncStream<ReachabilityStatus> { changes(of: \.status) }

    /// Calls `handler` on `queue` (``callbackQueue`` by default) with the current value
    /// of `keyPath`, then each time it changes. Cancel the returned subscription to stop.
    @discardableResult
    public func onChange<Value: Equatable & Sendable>(
        of keyPath: KeyPath<Path, Value> & Sendable, queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (Value) -> Void
    ) -> PathChangeSubscription {
        PathChanges.deliver(changes(of: keyPath), on: queue ?? callbackQueue, to: handler)
    }

    /// Where callbacks run unless the caller names a queue: a serial queue of the
    /// client's own. Not `.main`: the main queue runs only under `dispatchMain()`, a
    /// run loop or a UI toolkit, so a plain `main.swift` would never be called back.
    public let callbackQueue = DispatchQueue(label: "io.reachd.ReachabilityClient.callbacks")

    /// Calls `handler` on `queue` (``callbackQueue`` by default) with the current path
    /// (marked initial), then every change.
    /// - Returns: a token for `cancel(_:)`.
    @discardableResult
    public func onChange(queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (Path) -> Void) -> Int {
        let queue = queue ?? callbackQueue
        let id = subscribers.withLock { $0.add(callback: queue, handler) }
        followPathsIfNeeded()
        return id
    }

    /// Ends a callback subscription.
    public func cancel(_ token: Int) { unsubscribe(token) }

    /// Calls `handler` on the main actor with the current path (marked initial), then every
    /// change — for UI code, whose state Swift 6 lets only main-actor code touch:
    /// `reachd.onMainActorChange { path in label.text = path.status.description }`.
    /// The main actor runs under a UI toolkit's loop or `dispatchMain()`.
    /// - Returns: the subscription; it lasts until cancelled.
    @discardableResult
    public func onMainActorChange(_ handler: @escaping @MainActor (Path) -> Void) -> PathChangeSubscription {
        PathChanges.deliverOnMainActor(paths, to: handler)
    }

    /// Calls `handler` on the main actor with the current value of `keyPath`, then each time it changes.
    /// - Returns: the subscription; it lasts until cancelled.
    @discardableResult
    public func onMainActorChange<Value: Equatable & Sendable>(
        of keyPath: KeyPath<Path, Value> & Sendable,
        _ handler: @escaping @MainActor (Value) -> Void
    ) -> PathChangeSubscription {
        PathChanges.deliverOnMainActor(changes(of: keyPath), to: handler)
    }

    private func unsubscribe(_ id: Int) {
        let ending = subscribers.withLock { subscribers -> Follow? in
            subscribers.streams.remove(id)
            subscribers.callbacks[id] = nil
            subscribers.connectionStreams[id] = nil
            guard subscribers.isEmpty else { return nil }
            defer { subscribers.follow = nil; subscribers.current = nil; subscribers.connection = .looking }
            return subscribers.follow
        }
        ending.map(connection.remove)
    }

    private func followPathsIfNeeded() {
        let follow = subscribers.withLock { subscribers -> Follow? in
            guard subscribers.follow == nil else { return nil }
            subscribers.follow = pathFollow()
            return subscribers.follow
        }
        follow.map(connection.add)
    }

    // MARK: The connection

    /// Whether a daemon answers this client's subscriptions.
    public enum ConnectionState: Sendable, Equatable, CustomStringConvertible {
        /// Nothing is subscribed, or the first attempt to reach a daemon is under way.
        case looking
        /// A daemon answers there: `the system bus`, `the session bus`, or a D-Bus address (`unix:path=/run/reachd/bus`).
        case connected(to: String)
        /// No daemon answers, and the client tries again with back-off: why the last attempt failed.
        /// The path streams are silent meanwhile — which is not the network being down.
        case noDaemon(reason: String)

        public var description: String {
            switch self {
            case .looking: "looking for reachd"
            case let .connected(endpoint): "connected to reachd on \(endpoint)"
            case let .noDaemon(reason): "no reachd: \(reason)"
            }
        }
    }

    /// Whether a daemon answers the client's path subscriptions (``paths``, ``onChange(queue:_:)``,
    /// ``connectionStates``): `looking` while none is running.
    public var connectionState: ConnectionState { subscribers.withLock { $0.connection } }

    /// The connection's state now, then each change: connected to a daemon, looking,
    /// or no daemon answering (and why) — what tells "no daemon" from "offline", since
    /// the path streams are silent in both. Subscribing follows the daemon's path, as
    /// ``paths`` does (one connection for both). Ends when the consuming task is cancelled.
    public var connectionStates: AsyncStream<ConnectionState> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let id = subscribers.withLock { subscribers in
                let id = subscribers.newID()
                subscribers.connectionStreams[id] = continuation
                continuation.yield(subscribers.connection)
                return id
            }
            continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
            followPathsIfNeeded()
        }
    }

    /// Called by the connection when it reaches a daemon or loses it; heard while a path
    /// subscription lasts (the state is `looking` without one).
    func connectionChanged(to state: ConnectionState) {
        let streams = subscribers.withLock { subscribers -> [AsyncStream<ConnectionState>.Continuation] in
            guard subscribers.follow != nil, subscribers.connection != state else { return [] }
            subscribers.connection = state
            return Array(subscribers.connectionStreams.values)
        }
        for stream in streams { stream.yield(state) }
    }

    /// Delivers to every subscriber; the first delivery to each is the path marked initial.
    func deliver(_ path: Path, initial: Bool) {
        var copy = path
        copy.initial = initial
        let marked = copy
        let (streams, callbacks) = subscribers.withLock { subscribers in
            subscribers.current = path
            return (subscribers.streams.deliveries(restart: initial), subscribers.callbacks.values.map { $0 })
        }
        for stream in streams { stream.send(path) }
        for (queue, handler) in callbacks { queue.async { handler(marked) } }
    }
}
