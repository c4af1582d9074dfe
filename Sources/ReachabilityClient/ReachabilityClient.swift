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
    /// run by this user puts it (docs/api.md).
    public static var defaultSocketPath: String {
        access("/run/reachd/bus", F_OK) == 0 ? "/run/reachd/bus" : PrivateSocket.defaultPath
    }

    /// Why the daemon could not answer.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    static let name = "io.reachd.Reachability1"

    /// How many paths a `paths` stream holds for a consumer that does not keep up
    /// (as `ReachabilityMonitor.paths`): the latest only.
    public static let bufferedPaths = 1

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
                if case let .address(address) = endpoint, address.hasPrefix("unix:path=") {
                    try PrivateSocket.verifyOwnDirectory(of: String(address.dropFirst("unix:path=".count)))
                }
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

    /// Every interface the daemon sees, in index order: the inventory of
    /// `reachctl status --interfaces` (the path lists only the available ones).
    public func interfaces() throws(Failure) -> [InterfaceChange] {
        let document = try call("Interfaces")
        do {
            return try InterfaceChange.decodeArray(document)
        } catch {
            throw Failure(description: "the daemon's interfaces do not parse: \(error)")
        }
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
    /// The stream holds state, not history: a consumer that keeps up gets every
    /// change; one that reads slower skips the paths it had no time for, and the
    /// latest path is always the last it gets (the first it reads is marked
    /// `initial` all the same).
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
        let box = WatcherBox()
        let stream = InterfaceChangeStream { box.watcher?.stop() }
        let watcher = Watcher(client: self, mode: .interfaces(stream.buffer))
        box.watcher = watcher
        watcher.start()
        return stream
    }

    /// Where a stream's termination finds the watcher started after the stream was made.
    private final class WatcherBox: @unchecked Sendable {
        var watcher: Watcher?
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
        for stream in streams {
            // The stream holds one path: if the one replaced was the consumer's first, so is this one.
            if case let .dropped(replaced) = stream.yield(marked), replaced.initial, !marked.initial {
                var first = marked
                first.initial = true
                stream.yield(first)
            }
        }
        for (queue, handler) in callbacks { queue.async { handler(marked) } }
    }

    /// The subscription's thread: connect, read the path, follow StatusChanged;
    /// on any loss, back off and start over.
    fileprivate final class Watcher: @unchecked Sendable {
        /// What the watcher follows.
        enum Mode {
            /// StatusChanged: the path, for every `paths` and `onChange` subscriber.
            case paths
            /// InterfaceChanged, for one `interfaceChanges` stream.
            case interfaces(InterfaceChangeStream.Buffer)
        }

        /// Strong: subscribers keep their client alive; the last one to leave stops the watcher.
        let client: ReachabilityClient
        let mode: Mode
        /// The interfaces as last delivered, by index (interfaces mode).
        private var known: [Int: InterfaceChange] = [:]
        private var deliveredInventory = false
        private let stopped = Atomic<Bool>(false)
        private let wake: (read: Int32, write: Int32)
        private var last: Path?
        private var thread: DedicatedThread?

        init(client: ReachabilityClient, mode: Mode = .paths) {
            self.client = client
            self.mode = mode
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
                    switch mode {
                    case .paths: try follow()
                    case let .interfaces(buffer): try followInterfaces(into: buffer)
                    }
                    delay = client.reconnectDelays.first
                } catch {
                    // The daemon is not (or no longer) there: try again later.
                    sleep(for: delay)
                    delay = min(delay * 2, client.reconnectDelays.last)
                }
            }
        }

        /// One connection's life for `paths`: the document, then each StatusChanged newer than it.
        private func follow() throws {
            try follow("StatusChanged", reading: "Describe", answer: { [self] in offer(try ReachabilityClient.decode($0)) },
                       signal: { [self] document in (try? ReachabilityClient.decode(document)).map(offer) })
        }

        /// One connection's life for `interfaceChanges`: the inventory from
        /// WatchInterfaces, then each InterfaceChanged newer than it. After a
        /// reconnection the inventory is compared with what was delivered: what
        /// changed meanwhile is delivered, and what vanished as removed.
        private func followInterfaces(into buffer: InterfaceChangeStream.Buffer) throws {
            try follow("InterfaceChanged", reading: "WatchInterfaces", answer: { [self] inventory in
                let entries: [InterfaceChange]
                do {
                    entries = try InterfaceChange.decodeArray(inventory)
                } catch {
                    throw ReachabilityClient.Failure(description: "the daemon's interfaces do not parse: \(error)")
                }
                let initial = !deliveredInventory
                deliveredInventory = true
                var vanished = known
                for var entry in entries {
                    vanished[entry.index] = nil
                    entry.initial = initial
                    if initial || known[entry.index].map({ $0.interface != entry.interface || $0.master != entry.master }) ?? true {
                        deliver(entry, to: buffer)
                    }
                }
                for var gone in vanished.values {
                    gone.removed = true
                    gone.available = false
                    deliver(gone, to: buffer)
                }
            }, signal: { [self] document in (try? InterfaceChange(json: document)).map { deliver($0, to: buffer) } })
        }

        /// One connection's life: returns when it ends. Subscribes to `member`, then
        /// calls `method` (`Describe` is the one `connect` already called) and hands
        /// its answer to `answer` — again when, on a bus, the daemon's name changes
        /// owner (a restart behind the same connection; on the private socket a
        /// restart closes the connection instead).
        ///
        /// Signals that arrived while the method was answered are queued behind its
        /// reply but were sent before it: they are older than the answer, and are
        /// skipped (by serial), or the subscriber would end on an earlier state.
        private func follow(_ member: String, reading method: String, answer: @escaping (String) throws -> Void,
                            signal: @escaping (String) -> Void) throws {
            var answered = UInt64.max
            var refresh = method != "Describe"
            let (session, document, serial) = try client.connect { session in
                try session.connection.onSignal(sender: session.signalSender, path: "/io/reachd/Reachability1",
                                                interface: ReachabilityClient.name, member: member,
                                                twoArguments: true) { _, document, serial in
                    guard serial > answered, let document else { return }
                    signal(document)
                }
                try session.connection.onSignal(sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                                twoArguments: false) { name, _, _ in
                    guard name == ReachabilityClient.name else { return }
                    // A new daemon numbers its messages from 1 again.
                    answered = 0
                    refresh = true
                }
            }
            if !refresh {
                answered = serial
                try answer(document)
            }
            try pump(session) {
                guard refresh else { return }
                refresh = false
                // The name may have no owner for a moment: failing here means reconnecting.
                let (fresh, serial) = try session.connection.callWithSerial(method, destination: session.destination, timeout: .seconds(5))
                answered = serial
                try answer(fresh ?? "")
            }
        }

        private func deliver(_ entry: InterfaceChange, to buffer: InterfaceChangeStream.Buffer) {
            if entry.removed { known[entry.index] = nil } else { known[entry.index] = entry }
            buffer.put(entry)
        }

        /// Reads the connection until it closes or the watcher stops; `poll` runs before each wait.
        private func pump(_ session: Session, _ refresh: () throws -> Void) throws {
            let connection = session.connection
            while !isStopped {
                while try connection.process() {}
                try refresh()
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
