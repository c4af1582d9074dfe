import CSystemd
import CSystemdShim
import ReachabilityContract
import SDBus

#if canImport(Glibc)
import Glibc
#endif

/// The io.reachd.Reachability1 object of docs/api.md, served on every
/// connection given to it: the bus and each peer of the private socket.
package final class ReachabilityObject {
    /// Everything a subscriber holds of the object: the property values and the
    /// latest arguments of the signals that carry state. Signals that carry events
    /// (PinFailure) are not state: each is sent to every connection.
    package struct State: Equatable, Sendable {
        package var properties = Properties() {
            didSet { propertyValues = properties.values }
        }
        /// `properties`' values in the table's order: read once per change, not twice for
        /// every subscriber it is sent to (BENCHMARKS.md §23).
        private(set) var propertyValues = Properties().values
        /// StatusChanged's arguments: the status and the path document (none before the first path).
        package var status: Arguments?
        /// TrustChanged's arguments: the verdict and the trust status document (none before the first verdict).
        package var trust: Arguments?

        package struct Arguments: Equatable, Sendable {
            let first: String
            let second: String
        }
    }

    package private(set) var state = State()
    var properties: Properties { state.properties }
    private var subscribers: [Subscriber] = []
    package var connections: [BusConnection] { subscribers.map(\.connection) }
    package weak var delegate: (any ReachabilityObjectDelegate)?

    /// Brings subscribers that were behind up to date once they drained; switched on while any is.
    private var catchUp: EventLoop.Switch!
    /// Drops peers that stay behind for longer than `limits.catchUpTimeout`.
    private var stallTimer: EventLoop.Timer!

    package init(loop: EventLoop) throws(BusError) {
        catchUp = try loop.afterEachIteration { [unowned self] in bringUpToDate() }
        stallTimer = try loop.timer { [unowned self] in bringUpToDate() }
    }

    /// Who asks: on the bus, the sender's unique name (the broker caps connections
    /// per user); on the private socket, which has no sender, the peer's user, so
    /// that more connections do not buy more.
    func caller(of call: BusCall) -> String {
        if let sender = call.sender { return sender }
        let uid = subscriber(on: call.bus)?.connection.peerUID
        return uid.map { "uid \($0)" } ?? "peer \(UInt(bitPattern: call.bus))"
    }

    /// The subscriber a call came from (nil once its connection is gone).
    func subscriber(on bus: OpaquePointer?) -> Subscriber? { subscribers.first { $0.connection.bus == bus } }

    /// Whether anyone watches interfaces: told to the delegate whenever it changes,
    /// so that nothing is rendered for nobody.
    package private(set) var hasInterfaceWatchers = false
    package var onInterfaceWatchers: (Bool) -> Void = { _ in }

    /// How many watches one client (a connection of the private socket, a bus client) may hold.
    package static let pathWatchesPerClient = 8

    /// The keys of the `WatchPath()` watches someone holds: told to the delegate whenever
    /// the set changes, so that a watch nobody holds any more is no longer evaluated.
    package private(set) var pathWatches: Set<String> = []
    package var onPathWatches: (Set<String>) -> Void = { _ in }

    func pathWatchesChanged() {
        let now = Set(subscribers.filter(\.connection.isOpen).flatMap(\.pathWatchers.keys))
        guard now != pathWatches else { return }
        pathWatches = now
        onPathWatches(now)
    }

    /// A watched path changed: `PathChanged(key, document)` to the connections that
    /// watch it. A connection that cannot take more keeps the latest document per watch.
    package func publishWatchedPath(key: String, document: String) {
        for subscriber in subscribers where subscriber.pathWatchers[key] != nil { subscriber.pendingPaths[key] = document }
        bringUpToDate()
    }

    func interfaceWatchersChanged() {
        let now = subscribers.contains { $0.connection.isOpen && $0.watchesInterfaces }
        guard now != hasInterfaceWatchers else { return }
        hasInterfaceWatchers = now
        onInterfaceWatchers(now)
    }

    /// Serves the object on `connection` (and, on a peer, the broker stub bus
    /// clients need). It holds the current state: only changes from now on are sent.
    package func serve(on connection: BusConnection) throws(BusError) {
        try Self.interface.serve(self, at: ReachabilityContract.path, on: connection)
        if connection.isPeerToPeer { try connection.serveBrokerStub() }
        let subscriber = Subscriber(connection: connection, holding: state)
        subscribers.append(subscriber)
        if !connection.isPeerToPeer {
            // A bus client that watched interfaces and disconnected (a unique name loses its owner only then).
            try connection.onSignal(
                sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "NameOwnerChanged", twoArguments: false
            ) { [weak self, weak subscriber] name, _, _ in
                guard let self, let subscriber else { return }
                if subscriber.busInterfaceWatchers.contains(name) {
                    subscriber.setWatchesInterfaces(false, by: name)
                    interfaceWatchersChanged()
                }
                // Every watch it held let go (no short-circuit: each one must be).
                let watched = Array(subscriber.pathWatchers.keys).filter { subscriber.letGo($0, by: name) }
                if !watched.isEmpty { pathWatchesChanged() }
            }
        }
    }

    /// What a peer of the private socket may hold of the daemon (the private
    /// socket sets them from its `ConnectionLimits`), and where drops are said.
    var limits = ConnectionLimits()
    var log: (String) -> Void = { _ in }

    /// A new path document: StatusChanged on every connection, then PropertiesChanged for
    /// what `properties` changed. The properties are built only once the signal is handed
    /// to sd-bus: it is what subscribers wait for, and building them first held it up by
    /// their three hundred lines of cold code (BENCHMARKS.md §35). A connection that cannot
    /// take more now is sent both later, in one go, as ever.
    package func publish(status: String, document: String, properties: () -> Properties) {
        state.status = State.Arguments(first: status, second: document)
        bringUpToDate()
        state.properties = properties()
        bringUpToDate()
    }

    /// A new trust verdict: TrustChanged, on every connection.
    package func publishTrust(_ verdict: String, document: String) {
        state.trust = State.Arguments(first: verdict, second: document)
        bringUpToDate()
    }

    /// Interfaces that changed: `InterfaceChanged` (name, entry), one per interface, to
    /// every connection that watches interfaces. A connection that cannot take more
    /// keeps the latest entry per interface until it can.
    package func publishInterfaces(_ changes: [(index: Int, name: String, document: String)]) {
        for subscriber in subscribers where subscriber.watchesInterfaces {
            for change in changes { subscriber.pendingInterfaces[change.index] = (change.name, change.document) }
        }
        bringUpToDate()
    }

    /// Emits a signal that carries an event, not state, on every connection.
    package func emit(_ signal: ReachabilityContract.Signal, _ argument: String) {
        enforceLimits()
        for subscriber in subscribers where subscriber.connection.mayBeSentUnasked { subscriber.connection.emit(signal, argument) }
    }

    /// Sends each connection that can take more what changed since it was last sent
    /// anything; marks the others behind, to be brought up to date once they drained.
    /// Runs on every change, and after every loop iteration while any is behind.
    private func bringUpToDate() {
        let now = ContinuousClock.now
        for subscriber in subscribers { subscriber.bringUpToDate(with: state, now: now) { send(to: subscriber) } }
        enforceLimits()
        let behind = subscribers.compactMap { $0.connection.isPeerToPeer ? $0.behindSince : nil }
        catchUp.turn(on: subscribers.contains(where: \.isBehind))
        if let first = behind.min() {
            stallTimer.arm(after: max(.zero, now.duration(to: first + limits.catchUpTimeout)))
        } else {
            stallTimer.disarm()
        }
    }

    /// The state signals that differ from what it holds, then PropertiesChanged for
    /// the values that do. StatusChanged goes first: it is what subscribers wait
    /// for, and every message before it costs them a socket write and a wake-up.
    private func send(to subscriber: Subscriber) {
        let connection = subscriber.connection
        if let status = state.status, subscriber.sent.status != status {
            connection.emit(.statusChanged, status.first, status.second)
        }
        if let trust = state.trust, subscriber.sent.trust != trust {
            connection.emit(.trustChanged, trust.first, trust.second)
        }
        Self.interface.emitPropertiesChanged(
            changedProperties(Properties.names, from: subscriber.sent.propertyValues, to: state.propertyValues),
            at: ReachabilityContract.path, on: connection.bus)
        for key in subscriber.pendingPaths.keys.sorted() {
            guard subscriber.canTakeMore, let document = subscriber.pendingPaths.removeValue(forKey: key) else { break }
            connection.emit(.pathChanged, key, document)
        }
        // After the paths: a subscriber waiting for a path is not held up by a pod's veth.
        for index in subscriber.pendingInterfaces.keys.sorted() {
            guard subscriber.canTakeMore, let change = subscriber.pendingInterfaces.removeValue(forKey: index) else { break }
            connection.emit(.interfaceChanged, change.name, change.document)
        }
    }

    /// A peer that lets replies pile up, or stays behind for `catchUpTimeout`, does
    /// not read: it is closed, so it cannot grow the daemon's memory (a client that
    /// reconnects reads the current state). The bus is never dropped: the broker
    /// reads for its clients and applies its own limits.
    private func enforceLimits() {
        let now = ContinuousClock.now
        for subscriber in subscribers where subscriber.connection.isOpen && subscriber.connection.isPeerToPeer {
            let connection = subscriber.connection
            let queued = connection.queuedOutgoing
            let why: String
            if queued >= limits.queuedMessages {
                why = "\(queued) messages waiting"
            } else if let since = subscriber.behindSince, since.duration(to: now) >= limits.catchUpTimeout {
                why = "behind for \(limits.catchUpTimeout)"
            } else {
                continue
            }
            connection.close()
            log("private socket: dropped a peer of uid \(connection.peerUID.map(String.init) ?? "?") that does not read (\(why))")
        }
        forgetClosedConnections()
    }

    /// Forgets connections whose peer went away, or that were just dropped, and what they watched.
    package func forgetClosedConnections() {
        let closed = subscribers.contains { !$0.connection.isOpen }
        subscribers.removeAll { !$0.connection.isOpen }
        if closed {
            interfaceWatchersChanged()
            pathWatchesChanged()
        }
    }
}
