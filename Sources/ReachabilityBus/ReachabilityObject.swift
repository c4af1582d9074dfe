import CSystemd
import CSystemdShim
#if canImport(Glibc)
import Glibc
#endif

/// What the D-Bus object answers with. Implemented by the daemon; called on the loop thread.
package protocol ReachabilityObjectDelegate: AnyObject {
    /// The path document.
    func describe() -> String
    /// The path to one destination, as `reachctl route --json` prints it. May
    /// answer later (name resolution must not block the loop): call `reply` once,
    /// on the loop thread. `caller` tells callers apart (a bus name, or one peer).
    func route(to destination: String, caller: String, reply: @escaping (Result<String, BusMethodError>) -> Void)
    func trustStatus() -> String
    /// `caller`: the caller's user (nil when the bus does not say), for per-user limits.
    func recheckTrust(caller: uid_t?) throws(BusMethodError)
    /// Re-reads the config (the caller is root); `reply` once it is in force or refused, on the loop thread.
    func reload(reply: @escaping (Result<String, BusMethodError>) -> Void)
    /// Probes connectivity now and answers with the state (later: the probe must not block the loop).
    func checkConnectivity(caller: uid_t?, reply: @escaping (Result<String, BusMethodError>) -> Void)
    /// Every interface, as a JSON array (docs/api.md, `Interfaces()`).
    func interfaces() -> String
    /// Starts (or joins) a watch of the path to `destination` ("" for the default path)
    /// leaving by `interfaceTypes` (a comma-separated list, "" for all): `reply` once, on
    /// the loop thread, with the watch's key (`PathChanged`'s first argument) and its document.
    func watchPath(destination: String, interfaceTypes: String, caller: String,
                   reply: @escaping (Result<(key: String, document: String), BusMethodError>) -> Void)
}

/// The user who sent a method call: on a bus, the broker's word; on the private
/// socket, the peer's (SO_PEERCRED). Nil when neither says.
func senderUID(_ message: OpaquePointer?) -> uid_t? {
    var uid: uid_t = 0
    return reachd_bus_sender_euid(message, &uid) >= 0 ? uid : nil
}

/// A method's error as the caller sees it: a D-Bus error name and a message.
package struct BusMethodError: Error, Sendable {
    package let name: String
    package let message: String

    package init(_ name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    package static func failed(_ message: String) -> BusMethodError { .init("org.freedesktop.DBus.Error.Failed", message) }
    package static func accessDenied(_ message: String) -> BusMethodError { .init("org.freedesktop.DBus.Error.AccessDenied", message) }
    package static func limitsExceeded(_ message: String) -> BusMethodError { .init("org.freedesktop.DBus.Error.LimitsExceeded", message) }
}

/// The io.reachd.Reachability1 object of docs/api.md, served on every
/// connection given to it: the bus and each peer of the private socket.
package final class ReachabilityObject {
    /// The property values, in the order of docs/api.md.
    package struct Properties: Equatable, Sendable {
        package var status = "unknown"
        package var reason = ""
        package var interface = ""
        package var interfaceKind = ""
        package var expensive = false
        package var ipv4 = false
        package var ipv6 = false
        package var vpn = ""
        package var trust = "none"
        package var connectivity = "unknown"
        package var portalURL = ""
        package var supportsDNS = false
        package var dnsServers: [String] = []
        /// The network's captive-portal API (RFC 8908): "" when none is known.
        package var captivePortalAPI = ""
        /// router-advertisement, networkd or config; "" without an API.
        package var captivePortalSource = ""
        /// captive, not-captive, unknown (no usable answer yet); "" without an API.
        package var captivePortalStatus = ""
        package var venueInfoURL = ""
        /// Seconds since 1970 when the session ends; 0: not counted.
        package var sessionExpires: UInt64 = 0
        /// -1: not counted.
        package var bytesRemaining: Int64 = -1
        package var canExtendSession = false

        package init() {}

        static let names = ["Status", "Reason", "Interface", "InterfaceKind", "Expensive", "IPv4", "IPv6", "VPN", "Trust",
                            "Connectivity", "PortalURL", "SupportsDNS", "DNSServers", "CaptivePortalAPI", "CaptivePortalSource",
                            "CaptivePortalStatus", "VenueInfoURL", "SessionExpires", "BytesRemaining", "CanExtendSession"]

        func value(of name: String) -> BusValue? {
            switch name {
            case "Status": .string(status)
            case "Reason": .string(reason)
            case "Interface": .string(interface)
            case "InterfaceKind": .string(interfaceKind)
            case "Expensive": .boolean(expensive)
            case "IPv4": .boolean(ipv4)
            case "IPv6": .boolean(ipv6)
            case "VPN": .string(vpn)
            case "Trust": .string(trust)
            case "Connectivity": .string(connectivity)
            case "PortalURL": .string(portalURL)
            case "SupportsDNS": .boolean(supportsDNS)
            case "DNSServers": .strings(dnsServers)
            case "CaptivePortalAPI": .string(captivePortalAPI)
            case "CaptivePortalSource": .string(captivePortalSource)
            case "CaptivePortalStatus": .string(captivePortalStatus)
            case "VenueInfoURL": .string(venueInfoURL)
            case "SessionExpires": .u64(sessionExpires)
            case "BytesRemaining": .i64(bytesRemaining)
            case "CanExtendSession": .boolean(canExtendSession)
            default: nil
            }
        }
    }

    /// Everything a subscriber holds of the object: the property values and the
    /// latest arguments of the signals that carry state. Signals that carry events
    /// (PinFailure) are not state: each is sent to every connection.
    package struct State: Equatable, Sendable {
        package var properties = Properties()
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
        reachd_bus_set_handlers(reachd_bus_handlers(
            describe: { message, userdata, _ in
                ReachabilityObject.from(userdata).reply(message) { $0.describe() }
            },
            route: { message, userdata, _ in
                var destination: UnsafePointer<CChar>?
                let status = reachd_bus_read(message, &destination, nil)
                guard status >= 0, let destination else { return status }
                guard let delegate = ReachabilityObject.from(userdata).delegate else { return -ESHUTDOWN }
                let caller = ReachabilityObject.from(userdata).caller(of: message)
                delegate.route(to: String(cString: destination), caller: caller, reply: ReachabilityObject.laterReply(to: message))
                return 1
            },
            trust_status: { message, userdata, _ in
                ReachabilityObject.from(userdata).reply(message) { $0.trustStatus() }
            },
            recheck_trust: { message, userdata, error in
                ReachabilityObject.from(userdata).reply(message, error) { delegate throws(BusMethodError) in
                    try delegate.recheckTrust(caller: senderUID(message))
                    return nil
                }
            },
            reload: { message, userdata, error in
                let uid = senderUID(message)
                guard uid == 0 else {
                    return sd_bus_error_set(error, "org.freedesktop.DBus.Error.AccessDenied",
                                            uid == nil ? "the caller's credentials are unknown" : "Reload is for root only")
                }
                guard let delegate = ReachabilityObject.from(userdata).delegate else { return -ESHUTDOWN }
                delegate.reload(reply: ReachabilityObject.laterReply(to: message, empty: true))
                return 1
            },
            check_connectivity: { message, userdata, _ in
                guard let delegate = ReachabilityObject.from(userdata).delegate else { return -ESHUTDOWN }
                delegate.checkConnectivity(caller: senderUID(message), reply: ReachabilityObject.laterReply(to: message))
                return 1
            },
            interfaces: { message, userdata, _ in
                ReachabilityObject.from(userdata).reply(message) { $0.interfaces() }
            },
            watch_interfaces: { message, userdata, _ in
                let object = ReachabilityObject.from(userdata)
                let bus = sd_bus_message_get_bus(message)
                if let subscriber = object.subscribers.first(where: { $0.connection.bus == bus }) {
                    if let sender = sd_bus_message_get_sender(message) {
                        subscriber.busInterfaceWatchers.insert(String(cString: sender))
                    } else {
                        subscriber.peerWatchesInterfaces = true
                    }
                }
                // Signals sent after this reply are newer than the inventory it carries.
                let answer = object.reply(message) { $0.interfaces() }
                object.interfaceWatchersChanged()
                return answer
            },
            watch_path: { message, userdata, _ in
                var destination: UnsafePointer<CChar>?
                var types: UnsafePointer<CChar>?
                let status = reachd_bus_read(message, &destination, &types)
                guard status >= 0, let destination, let types else { return status }
                let object = ReachabilityObject.from(userdata)
                guard let delegate = object.delegate else { return -ESHUTDOWN }
                let bus = sd_bus_message_get_bus(message)
                let watcher = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
                let reply = ReachabilityObject.laterReply(to: message)
                if let subscriber = object.subscribers.first(where: { $0.connection.bus == bus }),
                   subscriber.pathWatchCount(of: watcher) >= ReachabilityObject.pathWatchesPerClient {
                    reply(.failure(.limitsExceeded("at most \(ReachabilityObject.pathWatchesPerClient) WatchPath() watches per connection")))
                    return 1
                }
                delegate.watchPath(destination: String(cString: destination), interfaceTypes: String(cString: types),
                                   caller: object.caller(of: message)) { [weak object] result in
                    // Registered before the reply: every PathChanged numbered after it is newer than its document.
                    if case let .success(watch) = result, let object,
                       let subscriber = object.subscribers.first(where: { $0.connection.bus == bus }) {
                        subscriber.pathWatchers[watch.key, default: []].insert(watcher)
                        object.pathWatchesChanged()
                    }
                    reply(result.map(\.document))
                }
                return 1
            },
            property: { _, _, _, name, reply, userdata, _ in
                guard let name, let value = ReachabilityObject.from(userdata).properties.value(of: String(cString: name)) else {
                    return -ENOENT
                }
                return value.append(to: reply)
            }))
    }

    /// Who asks: on the bus, the sender's unique name (the broker caps connections
    /// per user); on the private socket, which has no sender, the peer's user, so
    /// that more connections do not buy more.
    func caller(of message: OpaquePointer?) -> String {
        if let sender = sd_bus_message_get_sender(message) { return String(cString: sender) }
        let bus = sd_bus_message_get_bus(message)
        let uid = connections.first { $0.bus == bus }?.peerUID
        return uid.map { "uid \($0)" } ?? "peer \(UInt(bitPattern: bus))"
    }

    /// A reply given after the handler returned: the call is kept until it is sent.
    /// `empty`: the method returns nothing, whatever the success carries.
    static func laterReply(to message: OpaquePointer?, empty: Bool = false) -> (Result<String, BusMethodError>) -> Void {
        let call = sd_bus_message_ref(message)
        return { result in
            switch result {
            case let .success(answer):
                _ = empty ? reachd_bus_reply_empty(call) : reachd_bus_reply_string(call, answer)
            case let .failure(failure):
                var error = sd_bus_error()
                _ = sd_bus_error_set(&error, failure.name, failure.message)
                _ = sd_bus_reply_method_error(call, &error)
                sd_bus_error_free(&error)
            }
            sd_bus_message_unref(call)
        }
    }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> ReachabilityObject {
        Unmanaged<ReachabilityObject>.fromOpaque(userdata!).takeUnretainedValue()
    }

    private func reply(_ message: OpaquePointer?, _ body: (any ReachabilityObjectDelegate) -> String) -> Int32 {
        guard let delegate else { return -ESHUTDOWN }
        return reachd_bus_reply_string(message, body(delegate))
    }

    private func reply(_ message: OpaquePointer?, _ busError: UnsafeMutablePointer<sd_bus_error>?,
                       _ body: (any ReachabilityObjectDelegate) throws(BusMethodError) -> String?) -> Int32 {
        guard let delegate else { return -ESHUTDOWN }
        do {
            guard let answer = try body(delegate) else { return reachd_bus_reply_empty(message) }
            return reachd_bus_reply_string(message, answer)
        } catch {
            return sd_bus_error_set(busError, error.name, error.message)
        }
    }

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

    private func pathWatchesChanged() {
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

    private func interfaceWatchersChanged() {
        let now = subscribers.contains { $0.connection.isOpen && $0.watchesInterfaces }
        guard now != hasInterfaceWatchers else { return }
        hasInterfaceWatchers = now
        onInterfaceWatchers(now)
    }

    /// Serves the object on `connection` (and, on a peer, the broker stub bus
    /// clients need). It holds the current state: only changes from now on are sent.
    package func serve(on connection: BusConnection) throws(BusError) {
        var slot: OpaquePointer?
        try check(reachd_bus_add_object(connection.bus, &slot, Unmanaged.passUnretained(self).toOpaque()), "serving the object")
        connection.slots.append(slot!)
        if connection.isPeerToPeer {
            var broker: OpaquePointer?
            try check(reachd_bus_add_broker(connection.bus, &broker), "serving the broker stub")
            connection.slots.append(broker!)
        }
        let subscriber = Subscriber(connection: connection, holding: state)
        subscribers.append(subscriber)
        if !connection.isPeerToPeer {
            // A bus client that watched interfaces and disconnected (a unique name loses its owner only then).
            try connection.onSignal(sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                    member: "NameOwnerChanged", twoArguments: false) { [weak self, weak subscriber] name, _, _ in
                guard let self, let subscriber else { return }
                if subscriber.busInterfaceWatchers.remove(name) != nil { interfaceWatchersChanged() }
                var watched = false
                for key in Array(subscriber.pathWatchers.keys) where subscriber.pathWatchers[key]?.remove(name) != nil {
                    watched = true
                    if subscriber.pathWatchers[key]?.isEmpty == true { subscriber.pathWatchers[key] = nil }
                }
                if watched { pathWatchesChanged() }
            }
        }
    }

    /// What a peer of the private socket may hold of the daemon (the private
    /// socket sets them from its `ConnectionLimits`), and where drops are said.
    var limits = ConnectionLimits()
    var log: (String) -> Void = { _ in }

    /// A new path document: its property values and StatusChanged, on every connection.
    package func publish(_ properties: Properties, status: String, document: String) {
        state.properties = properties
        state.status = State.Arguments(first: status, second: document)
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
    package func emit(_ member: String, _ argument: String) {
        enforceLimits()
        for subscriber in subscribers { _ = reachd_bus_emit(subscriber.connection.bus, nil, member, argument, nil) }
    }

    /// Sends each connection that can take more what changed since it was last sent
    /// anything; marks the others behind, to be brought up to date once they drained.
    /// Runs on every change, and after every loop iteration while any is behind.
    private func bringUpToDate() {
        let now = ContinuousClock.now
        for subscriber in subscribers where !subscriber.isUpToDate(with: state) {
            if subscriber.canTakeMore {
                send(to: subscriber)
            } else if subscriber.behindSince == nil {
                subscriber.behindSince = now
            }
        }
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
        let bus = subscriber.connection.bus
        if let status = state.status, subscriber.sent.status != status {
            _ = reachd_bus_emit(bus, nil, "StatusChanged", status.first, status.second)
        }
        if let trust = state.trust, subscriber.sent.trust != trust {
            _ = reachd_bus_emit(bus, nil, "TrustChanged", trust.first, trust.second)
        }
        let changed = Properties.names.filter { subscriber.sent.properties.value(of: $0) != state.properties.value(of: $0) }
        if !changed.isEmpty {
            var names = changed.map { strdup($0) } + [nil]
            defer { names.forEach { free($0) } }
            _ = sd_bus_emit_properties_changed_strv(bus, REACHD_BUS_PATH, REACHD_BUS_INTERFACE, &names)
        }
        subscriber.sent = state
        for key in subscriber.pendingPaths.keys.sorted() {
            guard subscriber.canTakeMore, let document = subscriber.pendingPaths.removeValue(forKey: key) else { break }
            _ = reachd_bus_emit(bus, nil, "PathChanged", key, document)
        }
        // After the paths: a subscriber waiting for a path is not held up by a pod's veth.
        for index in subscriber.pendingInterfaces.keys.sorted() {
            guard subscriber.canTakeMore, let change = subscriber.pendingInterfaces.removeValue(forKey: index) else { break }
            _ = reachd_bus_emit(bus, nil, "InterfaceChanged", change.name, change.document)
        }
        let drained = subscriber.pendingInterfaces.isEmpty && subscriber.pendingPaths.isEmpty
        subscriber.behindSince = drained ? nil : (subscriber.behindSince ?? .now)
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
        // Connections whose peer went away, or just dropped.
        let closed = subscribers.contains { !$0.connection.isOpen }
        subscribers.removeAll { !$0.connection.isOpen }
        if closed {
            interfaceWatchersChanged()
            pathWatchesChanged()
        }
    }
}
