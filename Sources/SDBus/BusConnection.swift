import CSystemd
import CSystemdShim

#if canImport(Glibc)
import Glibc
#endif

/// One sd-bus connection: to a bus (system, session, an address), or one peer
/// of the private socket. Not thread-safe (nor is sd-bus): used by one thread.
package final class BusConnection {
    package let bus: OpaquePointer
    /// A peer of the private socket rather than a bus: signals need no broker.
    package let isPeerToPeer: Bool
    /// The peer's user, for a peer of the private socket.
    package var peerUID: uid_t?
    package var slots: [OpaquePointer] = []

    private init(bus: OpaquePointer, isPeerToPeer: Bool) {
        self.bus = bus
        self.isPeerToPeer = isPeerToPeer
    }

    deinit {
        for slot in slots + matches.values.map(\.slot) { sd_bus_slot_unref(slot) }
        sd_bus_flush_close_unref(bus)
    }

    /// Where a client or the daemon connects: `system`, `session`, or a D-Bus address
    /// (`unix:path=/run/reachd/bus`).
    package enum Endpoint: Sendable, Equatable, CustomStringConvertible {
        case system, session
        case address(String)

        package init(_ text: String) {
            switch text {
            case "system": self = .system
            case "session": self = .session
            default: self = .address(text.contains("=") ? text : "unix:path=\(text)")
            }
        }

        package var description: String {
            switch self {
            case .system: "the system bus"
            case .session: "the session bus"
            case let .address(address): address
            }
        }
    }

    /// Connects as a client. On an address the connection says Hello, as bus
    /// clients do: the private socket answers it (see `reachd_bus_add_broker`).
    package static func connect(_ endpoint: Endpoint) throws(BusError) -> BusConnection {
        var bus: OpaquePointer?
        switch endpoint {
        case .system:
            try check(sd_bus_open_system(&bus), "connecting to the system bus")
            return BusConnection(bus: bus!, isPeerToPeer: false)
        case .session:
            try check(sd_bus_open_user(&bus), "connecting to the session bus")
            return BusConnection(bus: bus!, isPeerToPeer: false)
        case let .address(address):
            try check(sd_bus_new(&bus), "creating a bus connection")
            // A client cannot tell a bus at an address from the private socket; it needs not.
            let connection = BusConnection(bus: bus!, isPeerToPeer: false)
            try check(sd_bus_set_address(bus, address), "connecting to \(address)")
            // Without this sd-bus never sends Hello on a custom address.
            try check(sd_bus_set_bus_client(bus, 1), "connecting to \(address)")
            try check(sd_bus_start(bus), "connecting to \(address)")
            return connection
        }
    }

    /// The socket buffers of a private-socket peer, each way (the kernel doubles
    /// it, to 256 KiB): room for bursts of path documents and for any request reachd answers.
    static let peerSocketBuffer = 128 * 1024

    /// Serves one accepted connection of the private socket (peer-to-peer).
    package static func serve(acceptedSocket descriptor: Int32) throws(BusError) -> BusConnection {
        var bus: OpaquePointer?
        try check(sd_bus_new(&bus), "creating a peer connection")
        let connection = BusConnection(bus: bus!, isPeerToPeer: true)
        var id = sd_id128_t()
        try check(sd_id128_randomize(&id), "creating a server id")
        try check(sd_bus_set_fd(bus, descriptor, descriptor), "serving a peer")
        try check(sd_bus_set_server(bus, 1, id), "serving a peer")
        try check(sd_bus_start(bus), "serving a peer")
        var filter: OpaquePointer?
        // The connection owns the slot and frees it before itself: the filter never outlives it.
        try check(
            sd_bus_add_filter(
                bus, &filter,
                { message, userdata, _ in
                    let connection = Unmanaged<BusConnection>.fromOpaque(userdata!).takeUnretainedValue()
                    // sd-bus synthesises Disconnected when the peer goes (or it closes the connection itself).
                    if sd_bus_message_is_signal(message, "org.freedesktop.DBus.Local", "Disconnected") > 0 {
                        connection.onDisconnect()
                    } else {
                        connection.hasSpoken = true
                    }
                    return 0
                }, Unmanaged.passUnretained(connection).toOpaque()), "serving a peer")
        connection.slots.append(filter!)
        // sd-bus forces 8 MiB socket buffers each way: a peer that never reads would
        // hold 8 MiB of kernel memory before its queue even starts to grow here.
        var size = Int32(peerSocketBuffer)
        for option in [SO_SNDBUF, SO_RCVBUF] {
            _ = setsockopt(descriptor, SOL_SOCKET, option, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        return connection
    }

    package func attach(to loop: EventLoop) throws(BusError) {
        try check(sd_bus_attach_event(bus, loop.event, 0), "attaching a bus connection to the loop")
    }

    package func requestName(_ name: String) throws(BusError) {
        try check(sd_bus_request_name(bus, name, 0), "owning \(name)")
    }

    package var isOpen: Bool { sd_bus_is_open(bus) > 0 }

    /// Authenticated (a peer) or past Hello (a client): messages flow.
    package var isReady: Bool { sd_bus_is_ready(bus) > 0 }

    /// Messages sd-bus holds for the peer, not yet written to its socket.
    package var queuedOutgoing: Int {
        var count: UInt64 = 0
        return sd_bus_get_n_queued_write(bus, &count) >= 0 ? Int(clamping: count) : 0
    }

    /// Nothing waits in sd-bus's queue for it, and it may be sent what it did not
    /// ask for: what is sent now goes straight to the kernel. A message is queued
    /// in user space only when the socket is full.
    package var canTakeMore: Bool { isReady && mayBeSentUnasked && queuedOutgoing == 0 }

    /// A peer of the private socket has had a message of its own processed.
    private(set) var hasSpoken = false
    /// Called, inside sd-bus's processing of this connection, when a peer of the private
    /// socket went away: its owners must let it go only after (`PrivateSocket.Admission`).
    package var onDisconnect: () -> Void = {}
    /// When the private socket saw the peer authenticated (`PrivateSocket.Admission`).
    package var authenticatedAt: ContinuousClock.Instant?
    /// How long a peer that says nothing waits for signals after authenticating.
    package static let silentPeerGrace: Duration = .milliseconds(500)

    /// Whether a signal may go to the connection now. A client that says Hello
    /// (busctl, dbus-send, sd-bus, GDBus on a bus address) drops the connection
    /// when anything but Hello's reply comes first — and it writes Hello only once
    /// the server has answered its authentication, a round trip after the peer
    /// counts as authenticated here. So a peer of the private socket is sent
    /// nothing unasked before its first message was processed (Hello's reply is
    /// then the first thing it receives), or — a peer that only listens —
    /// `silentPeerGrace` after it authenticated. A bus needs no such care.
    package var mayBeSentUnasked: Bool {
        guard isPeerToPeer, !hasSpoken else { return true }
        return authenticatedAt.map { $0.duration(to: .now) >= Self.silentPeerGrace } ?? false
    }

    /// Closes the connection now (its descriptor too); the object goes when unreferenced.
    package func close() { sd_bus_close(bus) }

    /// Calls a method taking zero, one or two strings and returning zero or one string;
    /// returns the answer and the reply's serial: a signal of the same sender with a lower
    /// serial was sent before the reply, and is older than the answer.
    package func callWithSerial(
        _ member: String, _ arguments: [String] = [], destination: String?, path: String, interface: String,
        timeout: Duration = .seconds(25)
    ) throws(BusError) -> (answer: String?, serial: UInt64) {
        precondition(arguments.count <= 2, "at most two string arguments")
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var result: UnsafeMutablePointer<CChar>?
        var serial: UInt64 = 0
        let status = reachd_bus_call(
            bus, destination, path, interface, member, arguments.first, arguments.dropFirst().first, timeout.microseconds,
            &result, &serial, &error)
        guard status >= 0 else {
            let name = error.name.map { String(cString: $0) }
            let message = error.message.map { String(cString: $0) }
            throw BusError(member, code: -status, name: name, message: message)
        }
        defer { free(result) }
        return (result.map { String(cString: $0) }, serial)
    }

    /// Sends a signal with one or two string arguments to whoever matches it. Their
    /// bytes go into the message as they are: a `String`'s are valid UTF-8, which
    /// sd-bus would otherwise check again, byte by byte.
    @discardableResult
    package func emit(path: String, interface: String, member: String, _ first: String, _ second: String? = nil) -> Int32 {
        var first = first
        return first.withUTF8 { first in
            guard var second else { return reachd_bus_emit(bus, path, interface, member, 1, first.baseAddress, first.count, nil, 0) }
            return second.withUTF8 { second in
                reachd_bus_emit(bus, path, interface, member, 2, first.baseAddress, first.count, second.baseAddress, second.count)
            }
        }
    }

    /// Processes what is queued (clients without an event loop); true when something was.
    package func process() throws(BusError) -> Bool {
        try check(sd_bus_process(bus, nil), "reading from the bus") > 0
    }

    /// Waits up to `timeout` (nil: forever) for something to process.
    package func wait(timeout: Duration?) throws(BusError) {
        let result = sd_bus_wait(bus, timeout?.microseconds ?? UInt64.max)
        if result == -EINTR { return }
        try check(result, "waiting for the bus")
    }

    package var fileDescriptor: Int32 { sd_bus_get_fd(bus) }

    /// The poll events sd-bus waits for now, and when it must run again (nil: no deadline).
    package var pollRequest: (events: Int16, deadline: ContinuousClock.Instant?) {
        let events = Int16(truncatingIfNeeded: max(0, sd_bus_get_events(bus)))
        var usec: UInt64 = 0
        guard sd_bus_get_timeout(bus, &usec) >= 0, usec != UInt64.max else { return (events, nil) }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        let remaining = usec > nowUsec ? usec - nowUsec : 0
        return (events, ContinuousClock.now + .microseconds(Int64(remaining)))
    }

    final class MessageHandler {
        let body: (BusMessage) -> Void
        init(_ body: @escaping (BusMessage) -> Void) { self.body = body }
    }

    /// Calls `body` with the first one or two string arguments of each matching
    /// signal (`twoArguments`: the signal carries at least two strings), and its serial.
    @discardableResult
    package func onSignal(
        sender: String?, path: String, interface: String, member: String, twoArguments: Bool,
        _ body: @escaping (String, String?, UInt64) -> Void
    ) throws(BusError) -> SignalMatch {
        try onSignal(sender: sender, path: path, interface: interface, member: member) { message in
            guard let first = message.string() else { return }
            let second = twoArguments ? message.string() : nil
            if twoArguments, second == nil { return }
            body(first, second, message.serial)
        }
    }

    /// Calls `body` with each matching signal (a nil field matches any), until the
    /// connection goes or the returned match is cancelled.
    @discardableResult
    package func onSignal(
        sender: String?, path: String?, interface: String, member: String,
        _ body: @escaping (BusMessage) -> Void
    ) throws(BusError) -> SignalMatch {
        let handler = MessageHandler(body)
        var slot: OpaquePointer?
        try check(
            sd_bus_match_signal(
                bus, &slot, sender, path, interface, member,
                { message, userdata, _ in
                    Unmanaged<MessageHandler>.fromOpaque(userdata!).takeUnretainedValue().body(BusMessage(message!))
                    return 0
                }, Unmanaged.passUnretained(handler).toOpaque()), "subscribing to \(member)")
        nextMatch += 1
        matches[nextMatch] = (slot!, handler)
        return SignalMatch(id: nextMatch)
    }

    /// A signal subscription of this connection's.
    package struct SignalMatch: Hashable, Sendable { let id: Int }
    private var matches: [Int: (slot: OpaquePointer, handler: MessageHandler)] = [:]
    private var nextMatch = 0

    /// Ends a signal subscription (its match rule leaves the bus).
    package func cancel(_ match: SignalMatch) {
        guard let (slot, _) = matches.removeValue(forKey: match.id) else { return }
        sd_bus_slot_unref(slot)
    }

    /// This connection's unique name on its bus (`:1.42`).
    package var uniqueName: String? {
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &name) >= 0, let name else { return nil }
        return String(cString: name)
    }

    /// Calls a method without waiting: `reply` gets the answer (or the error) on the loop.
    /// `timeout`: nil for sd-bus's default (25 s).
    package func callAsync(
        _ destination: String, _ path: String, _ interface: String, _ member: String,
        _ arguments: [BusMessage.Argument] = [], timeout: Duration? = nil, reply: @escaping (BusMessage) -> Void
    ) throws(BusError) {
        var call: OpaquePointer?
        try check(sd_bus_message_new_method_call(bus, &call, destination, path, interface, member), "calling \(member)")
        defer { sd_bus_message_unref(call) }
        for argument in arguments { try check(argument.append(to: call), "calling \(member)") }
        let handler = Unmanaged.passRetained(MessageHandler(reply)).toOpaque()
        // A floating slot: the call lives as long as the connection; sd-bus calls back with an error if it closes first.
        let status = sd_bus_call_async(
            bus, nil, call,
            { message, userdata, _ in
                Unmanaged<MessageHandler>.fromOpaque(userdata!).takeRetainedValue().body(BusMessage(message!))
                return 0
            }, handler, timeout?.microseconds ?? 0)
        if status < 0 { Unmanaged<MessageHandler>.fromOpaque(handler).release() }
        try check(status, "calling \(member)")
    }

    static func serial(of message: OpaquePointer?) -> UInt64 {
        var serial: UInt64 = 0
        _ = sd_bus_message_get_cookie(message, &serial)
        return serial
    }
}
