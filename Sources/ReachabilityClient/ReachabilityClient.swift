import CSystemd
import Dispatch
import FoundationEssentials
@_exported import ReachabilityCore
import ReachabilityBus
import Sockets
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The current network path from the reachd daemon, for Swift apps: read it,
/// subscribe to it (AsyncStream or a callback), ask for one destination's path
/// or the trust verdicts — the same `Path` type as the `Reachability` library.
///
/// The client finds the daemon by its bus name, then on its private socket.
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
    }

    /// Where the private socket is: the system service's, else where a daemon
    /// run by this user puts it (CONTRACT.md).
    public static var defaultSocketPath: String {
        access("/run/reachd/bus", F_OK) == 0 ? "/run/reachd/bus" : PrivateSocket.defaultPath
    }

    /// Why the daemon could not answer.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    static let name = "io.reachd.Reachability1"

    /// How many paths a `paths` stream holds for a consumer that does not keep up
    /// (as `ReachabilityMonitor.paths`).
    public static let bufferedPaths = 4096

    /// A connection to the daemon. Calls always name the daemon (a peer ignores
    /// the destination); signals are taken only from the name's owner on the
    /// system and session buses, and from anyone on an address, which may be the
    /// private socket (a peer's signals carry no sender).
    struct Session {
        let connection: BusConnection
        let destination = ReachabilityClient.name
        let signalSender: String?
    }

    /// Tries the endpoints in order; the first that answers Describe wins. Returns
    /// the document and its reply's serial (the daemon's signals with a lower one are older).
    /// `subscribe` runs on each connection before Describe: on a bus, a match added
    /// after it could miss a change made between the answer and the match.
    func connect(subscribe: (Session) throws -> Void = { _ in }) throws(Failure) -> (Session, document: String, serial: UInt64) {
        var attempts: [(BusConnection.Endpoint, String?)]
        switch endpoint {
        case .automatic: attempts = [(.system, Self.name), (.address("unix:path=\(Self.defaultSocketPath)"), nil)]
        case .system: attempts = [(.system, Self.name)]
        case .session: attempts = [(.session, Self.name)]
        case let .address(address): attempts = [(BusConnection.Endpoint(address), nil)]
        }
        var reasons: [String] = []
        for (endpoint, sender) in attempts {
            do {
                let session = Session(connection: try BusConnection.connect(endpoint), signalSender: sender)
                try subscribe(session)
                let (document, serial) = try session.connection.callWithSerial("Describe", destination: Self.name, timeout: .seconds(5))
                return (session, document ?? "", serial)
            } catch {
                reasons.append("\(endpoint): \(error)")
            }
        }
        throw Failure(description: "no reachd answers (\(reasons.joined(separator: "; ")))")
    }

    static func decode(_ document: String) throws(Failure) -> Path {
        do {
            return try JSONDecoder().decode(Path.self, from: Data(document.utf8))
        } catch {
            throw Failure(description: "the daemon's path document does not parse: \(error)")
        }
    }

    /// The daemon's current path.
    public func currentPath() throws(Failure) -> Path {
        try Self.decode(try connect().document)
    }

    /// The daemon's path to a host name or address (like `reachctl route`).
    public func route(to destination: String) throws(Failure) -> Path {
        try Self.decode(try call("Route", destination))
    }

    /// The latest trust round: the overall verdict, each host's verdict and reason.
    public func trustStatus() throws(Failure) -> TrustStatus {
        let document = try trustStatusDocument()
        do {
            return try TrustStatus(json: document)
        } catch {
            throw Failure(description: "the daemon's trust status does not parse: \(error)")
        }
    }

    /// The same as JSON, as the daemon wrote it (what `reachctl trust status --json` prints).
    public func trustStatusDocument() throws(Failure) -> String {
        try call("TrustStatus")
    }

    /// Asks the daemon to probe connectivity now (at most once per 10 s) and returns the
    /// state it published after the probe. Fails when no `[connectivity] uri` is configured.
    public func checkConnectivity() throws(Failure) -> Connectivity {
        let answer = try call("CheckConnectivity")
        guard let state = Connectivity(rawValue: answer) else {
            throw Failure(description: "the daemon answered CheckConnectivity with \"\(answer)\"")
        }
        return state
    }

    /// Asks the daemon to re-read its config (root only).
    public func reload() throws(Failure) {
        _ = try call("Reload")
    }

    /// Calls a method of the daemon's object.
    func call(_ member: String, _ argument: String? = nil) throws(Failure) -> String {
        let (session, _, _) = try connect()
        do {
            return try session.connection.call(member, argument, destination: session.destination) ?? ""
        } catch {
            throw Failure(description: error.remoteMessage ?? "\(error)")
        }
    }

    // MARK: Subscriptions

    private struct Subscribers {
        var streams: [Int: AsyncStream<Path>.Continuation] = [:]
        var callbacks: [Int: (DispatchQueue, @Sendable (Path) -> Void)] = [:]
        var nextID = 0
        var watcher: Watcher?
        var isEmpty: Bool { streams.isEmpty && callbacks.isEmpty }
    }

    private let subscribers = Mutex(Subscribers())

    /// The current path (marked initial), then every change. Ends when the task is cancelled.
    ///
    /// A consumer that keeps up gets every change. One that falls more than
    /// `bufferedPaths` behind skips the oldest it has not read: the latest path is
    /// always the last it gets.
    public var paths: AsyncStream<Path> {
        AsyncStream(bufferingPolicy: .bufferingNewest(Self.bufferedPaths)) { continuation in
            let id = subscribers.withLock { subscribers in
                subscribers.nextID += 1
                subscribers.streams[subscribers.nextID] = continuation
                return subscribers.nextID
            }
            continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
            startWatcherIfNeeded()
        }
    }

    /// Calls `handler` on `queue` with the current path (marked initial), then every change.
    /// - Returns: a token for `cancel(_:)`.
    @discardableResult
    public func onChange(queue: DispatchQueue = .main, _ handler: @escaping @Sendable (Path) -> Void) -> Int {
        let id = subscribers.withLock { subscribers in
            subscribers.nextID += 1
            subscribers.callbacks[subscribers.nextID] = (queue, handler)
            return subscribers.nextID
        }
        startWatcherIfNeeded()
        return id
    }

    /// Ends a callback subscription.
    public func cancel(_ token: Int) { unsubscribe(token) }

    private func unsubscribe(_ id: Int) {
        let stopping = subscribers.withLock { subscribers -> Watcher? in
            subscribers.streams[id] = nil
            subscribers.callbacks[id] = nil
            guard subscribers.isEmpty else { return nil }
            defer { subscribers.watcher = nil }
            return subscribers.watcher
        }
        stopping?.stop()
    }

    private func startWatcherIfNeeded() {
        subscribers.withLock { subscribers in
            guard subscribers.watcher == nil else { return }
            let watcher = Watcher(client: self)
            subscribers.watcher = watcher
            watcher.start()
        }
    }

    /// Delivers to every subscriber; the first delivery to each is the path marked initial.
    fileprivate func deliver(_ path: Path, initial: Bool) {
        var copy = path
        copy.initial = initial
        let marked = copy
        let (streams, callbacks) = subscribers.withLock { ($0.streams.values.map { $0 }, $0.callbacks.values.map { $0 }) }
        for stream in streams { stream.yield(marked) }
        for (queue, handler) in callbacks { queue.async { handler(marked) } }
    }

    /// The subscription's thread: connect, read the path, follow StatusChanged;
    /// on any loss, back off and start over.
    fileprivate final class Watcher: @unchecked Sendable {
        /// Strong: subscribers keep their client alive; the last one to leave stops the watcher.
        let client: ReachabilityClient
        private let stopped = Atomic<Bool>(false)
        private let wake: (read: Int32, write: Int32)
        private var last: Path?
        private var thread: DedicatedThread?

        init(client: ReachabilityClient) {
            self.client = client
            var ends: [Int32] = [0, 0]
            _ = pipe(&ends)
            for end in ends { _ = fcntl(end, F_SETFL, O_NONBLOCK); _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            wake = (ends[0], ends[1])
        }

        deinit {
            close(wake.read)
            close(wake.write)
        }

        func start() {
            // No thread means no subscription: say so rather than fail silently.
            do {
                thread = try DedicatedThread { [self] in run() }
            } catch {
                var line = "ReachabilityClient: cannot start its thread: \(error)\n"
                line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
            }
        }

        func stop() {
            stopped.store(true, ordering: .sequentiallyConsistent)
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }

        private var isStopped: Bool { stopped.load(ordering: .sequentiallyConsistent) }

        private func offer(_ path: Path) {
            if let last, last.isSamePath(as: path) { return }
            let initial = last == nil
            last = path
            client.deliver(path, initial: initial)
        }

        private func run() {
            var delay = client.reconnectDelays.first
            while !isStopped {
                do {
                    try follow()
                    delay = client.reconnectDelays.first
                } catch {
                    // The daemon is not (or no longer) there: try again later.
                    sleep(for: delay)
                    delay = min(delay * 2, client.reconnectDelays.last)
                }
            }
        }

        /// One connection's life: returns when it ends.
        ///
        /// Signals that arrived while Describe was answered are queued behind its
        /// reply but were sent before it: they are older than the document, and are
        /// skipped (by serial), or the subscriber would end on an earlier state.
        private func follow() throws {
            var answered = UInt64.max
            var refresh = false
            let (session, document, serial) = try client.connect { [self] session in
                try session.connection.onSignal(sender: session.signalSender, path: "/io/reachd/Reachability1",
                                                interface: ReachabilityClient.name, member: "StatusChanged",
                                                twoArguments: true) { [self] _, document, serial in
                    guard serial > answered, let document, let path = try? ReachabilityClient.decode(document) else { return }
                    offer(path)
                }
                // On a bus the daemon can restart behind the same connection: read the path again.
                // (On the private socket this never comes: a restart closes the connection.)
                try session.connection.onSignal(sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                                twoArguments: false) { name, _, _ in
                    guard name == ReachabilityClient.name else { return }
                    // A new daemon numbers its messages from 1 again.
                    answered = 0
                    refresh = true
                }
            }
            answered = serial
            let connection = session.connection
            offer(try ReachabilityClient.decode(document))
            while !isStopped {
                while try connection.process() {}
                if refresh {
                    refresh = false
                    // The name may have no owner for a moment: failing here means reconnecting.
                    let (fresh, serial) = try connection.callWithSerial("Describe", destination: session.destination, timeout: .seconds(5))
                    answered = serial
                    offer(try ReachabilityClient.decode(fresh ?? ""))
                }
                guard connection.isOpen else { throw ReachabilityClient.Failure(description: "the connection closed") }
                let request = connection.pollRequest
                var descriptors = [pollfd(fd: connection.fileDescriptor, events: request.events, revents: 0),
                                   pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
                let timeout = request.deadline.map { deadline -> Int32 in
                    let remaining = ContinuousClock.now.duration(to: deadline)
                    return Int32(clamping: max(0, remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
                } ?? -1
                _ = poll(&descriptors, 2, timeout)
            }
        }

        private func sleep(for delay: Duration) {
            var descriptor = pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
            _ = poll(&descriptor, 1, milliseconds)
        }
    }
}
