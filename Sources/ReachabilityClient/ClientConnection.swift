import Dispatch
import ReachabilityContract
import SDBus
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

extension ReachabilityClient {
    /// The client's one connection to the daemon, shared by its calls and all its
    /// streams: one thread, one wake-up pipe, one D-Bus connection (sd-bus is touched
    /// on that thread only). The thread starts with the first call or stream and ends
    /// with the client. While a stream follows something it stays connected: on any
    /// loss it backs off, connects again, and has every stream read its state anew.
    /// A call made while no daemon answers tries at once, and fails with why.
    final class Connection: @unchecked Sendable {
        /// A call waiting for the thread.
        struct Call {
            let request: Request
            let timeout: Duration
            let done: @Sendable (Result<String, Failure>) -> Void
        }

        private struct Mailbox {
            var added: [Follow] = []
            var removed: [Follow] = []
            var calls: [Call] = []
            var live = 0
            var stopped = false
            var thread: DedicatedThread?
        }

        private let endpoint: Endpoint
        private let reconnectDelays: (first: Duration, last: Duration)
        /// Told when the connection reaches a daemon or loses it: set once by the client's
        /// init, before the thread starts; weak, since the client owns the connection.
        weak var client: ReachabilityClient?
        private let mailbox = Mutex(Mailbox())
        private let wake: WakePipe?

        // The thread's own.
        private var follows: [ObjectIdentifier: Follow] = [:]
        private var inFlight: [Int: @Sendable (Result<String, Failure>) -> Void] = [:]
        private var nextCall = 0

        init(endpoint: Endpoint, reconnectDelays: (first: Duration, last: Duration)) {
            self.endpoint = endpoint
            self.reconnectDelays = reconnectDelays
            wake = try? WakePipe()
        }

        private func stateChanged(_ state: ConnectionState) { client?.connectionChanged(to: state) }

        /// Ends the thread (and the connection) once it has answered what is under way.
        func stop() {
            mailbox.withLock { $0.stopped = true }
            wake?.signal()
        }

        /// Starts following; the stream's termination calls `remove`.
        func add(_ follow: Follow) {
            post {
                $0.added.append(follow); $0.live += 1
            }
        }

        func remove(_ follow: Follow) {
            post {
                $0.removed.append(follow); $0.live -= 1
            }
        }

        /// Sends a call; `done` gets its answer (or why there is none) on the connection's thread.
        func send(_ call: Call) {
            post { $0.calls.append(call) }
        }

        private func post(_ change: (inout Mailbox) -> Void) {
            let failure = mailbox.withLock { mailbox -> Failure? in
                change(&mailbox)
                guard mailbox.thread == nil, !mailbox.stopped else { return nil }
                do {
                    guard wake != nil else { throw Failure(description: "no wake-up pipe") }
                    mailbox.thread = try DedicatedThread(.client) { [self] in run() }
                    return nil
                } catch {
                    return Failure(description: "cannot start its thread: \(error)")
                }
            }
            if let failure {
                // No thread means no answer and no stream: say so rather than fail silently.
                for call in mailbox.withLock({ mailbox in
                    defer { mailbox.calls = [] }; return mailbox.calls
                }) { call.done(.failure(failure)) }
                var line = "ReachabilityClient: \(failure)\n"
                line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
            }
            wake?.signal()
        }

        // MARK: The thread

        private func run() {
            var delay = reconnectDelays.first
            while true {
                let (live, calls, stopped) = mailbox.withLock { ($0.live, $0.calls.count, $0.stopped) }
                if stopped { break }
                guard live > 0 || calls > 0 else {
                    waitForWork(nil)
                    continue
                }
                let session: Session
                do throws(Failure) {
                    session = try connect()
                    delay = reconnectDelays.first
                } catch {
                    if mailbox.withLock({ $0.stopped }) { break }
                    stateChanged(.noDaemon(reason: error.description))
                    for call in takeWork(calls: true).calls { call.done(.failure(error)) }
                    // Streams try again later; a new call tries at once.
                    if mailbox.withLock({ $0.live }) > 0 {
                        waitForWork(delay)
                        delay = min(delay * 2, reconnectDelays.last)
                    }
                    continue
                }
                do throws(Failure) {
                    try serve(session)
                    break
                } catch {
                    if mailbox.withLock({ $0.stopped }) { break }
                    stateChanged(.noDaemon(reason: error.description))
                    // Lost: calls waiting to be sent connect again at once, streams after the back-off.
                    if mailbox.withLock({ $0.calls.isEmpty && $0.live > 0 }) { waitForWork(delay) }
                    delay = min(delay * 2, reconnectDelays.last)
                }
            }
            let calls = mailbox.withLock { mailbox in
                // The thread holds the connection: letting go of it ends both.
                defer { (mailbox.calls, mailbox.thread) = ([], nil) }
                return mailbox.calls
            }
            for call in calls { call.done(.failure(Failure(description: "the client is gone"))) }
        }

        /// Takes what was posted (the calls too, with `calls`); the follows that started are
        /// held from now on, and those that ended returned for `end`.
        private func takeWork(calls takingCalls: Bool) -> (added: [Follow], removed: [Follow], calls: [Call]) {
            let work = mailbox.withLock { mailbox -> (added: [Follow], removed: [Follow], calls: [Call]) in
                defer {
                    (mailbox.added, mailbox.removed) = ([], [])
                    if takingCalls { mailbox.calls = [] }
                }
                return (mailbox.added, mailbox.removed, takingCalls ? mailbox.calls : [])
            }
            for follow in work.added { follows[ObjectIdentifier(follow)] = follow }
            for follow in work.removed { follows[ObjectIdentifier(follow)] = nil }
            return work
        }

        /// Sleeps until something is posted, or `timeout` passes (nil: no limit).
        private func waitForWork(_ timeout: Duration?) {
            guard let wake else { return }
            var descriptor = pollfd(fd: wake.readEnd.rawValue, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, timeout.map(Self.milliseconds) ?? -1)
            wake.drain()
        }

        private static func milliseconds(_ duration: Duration) -> Int32 {
            Int32(clamping: max(0, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
        }

        /// A connection to the daemon. Calls always name the daemon (a peer ignores
        /// the destination); signals are taken only from the name's owner on the
        /// system and session buses, and from anyone on an address, which may be the
        /// private socket (a peer's signals carry no sender).
        struct Session {
            let connection: BusConnection
            let signalSender: String?
            /// Where the daemon answered, as ``ConnectionState/connected(to:)`` says it.
            let endpoint: String
        }

        /// Tries the endpoints in order; the first that answers Describe wins, and its
        /// answer is the path streams' first. Every stream's signal is subscribed to
        /// before: on a bus, a match added after it could miss a change made between
        /// the answer and the match.
        private func connect() throws(Failure) -> Session {
            var attempts: [(BusConnection.Endpoint, String?)]
            switch endpoint {
            case .automatic:
                attempts = [(.system, ReachabilityContract.name), (.address("unix:path=\(ReachabilityClient.defaultSocketPath)"), nil)]
            case .system: attempts = [(.system, ReachabilityContract.name)]
            case .session: attempts = [(.session, ReachabilityContract.name)]
            case let .address(address): attempts = [(BusConnection.Endpoint(address), nil)]
            }
            var reasons: [String] = []
            for (endpoint, sender) in attempts {
                do {
                    if case let .address(address) = endpoint, address.hasPrefix("unix:path=") {
                        try PrivateSocketPlace.verifyOwnDirectory(of: String(address.dropFirst("unix:path=".count)))
                    }
                    let session = Session(connection: try BusConnection.connect(endpoint), signalSender: sender, endpoint: "\(endpoint)")
                    _ = takeWork(calls: false)
                    for follow in follows.values { try subscribe(follow, on: session) }
                    try session.connection.onSignal(
                        sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                        interface: "org.freedesktop.DBus", member: "NameOwnerChanged", twoArguments: false
                    ) { [self] name, _, _ in
                        guard name == ReachabilityContract.name else { return }
                        // A new daemon numbers its messages from 1 again, and holds none of the watches.
                        for follow in follows.values where follow.read != nil { follow.mustRead(after: 0) }
                    }
                    let (document, serial) = try session.connection.call(.describe, timeout: .seconds(5))
                    for follow in follows.values where follow.read?.method == .describe {
                        try follow.answered(document ?? "", serial: serial)
                    }
                    stateChanged(.connected(to: session.endpoint))
                    return session
                } catch {
                    reasons.append("\(endpoint): \(error)")
                }
            }
            throw Failure(description: "no reachd answers (\(reasons.joined(separator: "; ")))", isNoDaemon: true)
        }

        /// Subscribes a follow to its signal; what it reads comes next (`serve`).
        private func subscribe(_ follow: Follow, on session: Session) throws(BusError) {
            follow.mustRead(after: follow.read == nil ? 0 : .max)
            follow.match = try session.connection.onSignal(follow.signal, from: session.signalSender) {
                [weak follow] first, second, serial in
                follow?.signalled(first, second ?? "", serial: serial)
            }
        }

        /// One connection's life: returns when the client goes, throws when the connection does.
        private func serve(_ session: Session) throws(Failure) {
            let connection = session.connection
            defer { failInFlight(Failure(description: "the connection to reachd closed")) }
            while true {
                do {
                    while try connection.process() {}
                } catch {
                    throw Failure(description: "\(error)")
                }
                if mailbox.withLock({ $0.stopped }) { return }
                let (added, removed, calls) = takeWork(calls: true)
                for follow in removed { end(follow, on: session) }
                do {
                    for follow in added { try subscribe(follow, on: session) }
                } catch {
                    throw Failure(description: "\(error)")
                }
                // A path subscriber that joins a running connection is told it is connected.
                if !added.isEmpty { stateChanged(.connected(to: session.endpoint)) }
                for call in calls { send(call, on: session) }
                let now = ContinuousClock.now
                for follow in follows.values where follow.isDue(at: now) { read(follow, on: session) }
                guard connection.isOpen else { throw Failure(description: "the connection to reachd closed") }
                let request = connection.pollRequest
                let retry = follows.values.compactMap(\.retryAt).min()
                let deadline = [request.deadline, retry].compactMap { $0 }.min()
                var descriptors = [
                    pollfd(fd: connection.fileDescriptor, events: request.events, revents: 0),
                    pollfd(fd: wake!.readEnd.rawValue, events: Int16(POLLIN), revents: 0)
                ]
                _ = poll(&descriptors, 2, deadline.map { Self.milliseconds(ContinuousClock.now.duration(to: $0)) } ?? -1)
                if descriptors[1].revents != 0 { wake!.drain() }
            }
        }

        /// A follow's stream ended: its signal is no longer subscribed to, and a watch the
        /// daemon holds for this connection is let go unless another stream still follows it.
        private func end(_ follow: Follow, on session: Session) {
            if let match = follow.match { session.connection.cancel(match) }
            guard let unwatch = follow.unwatch, !follows.values.contains(where: { $0.unwatch == unwatch }) else { return }
            try? session.connection.callAsync(unwatch.method, unwatch.arguments) { _ in }
        }

        /// Reads a follow's state; signals older than the answer are skipped. A daemon that
        /// refuses (a limit, a bad argument) is asked again later; anything else is the
        /// connection failing.
        private func read(_ follow: Follow, on session: Session) {
            guard let read = follow.read else { return }
            follow.reading()
            do {
                try session.connection.callAsync(read.method, read.arguments, timeout: .seconds(5)) { [unowned self] message in
                    guard follows[ObjectIdentifier(follow)] === follow else { return }
                    if let name = message.errorName {
                        if Self.isRefusal(name) {
                            follow.refused(delays: reconnectDelays)
                        } else {
                            session.connection.close()
                        }
                        return
                    }
                    do {
                        try follow.answered(message.string() ?? "", serial: message.serial)
                    } catch {
                        session.connection.close()
                    }
                }
            } catch {
                // Not even sent: the connection is failing; the next one reads again.
                session.connection.close()
            }
        }

        /// What a bus answers for a name nobody owns.
        private static let noOwner: Set = ["org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"]

        /// The daemon answered with an error of its own, rather than not answering.
        private static func isRefusal(_ errorName: String) -> Bool {
            errorName.hasPrefix("io.reachd.")
                || [
                    "org.freedesktop.DBus.Error.LimitsExceeded", "org.freedesktop.DBus.Error.InvalidArgs",
                    "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.Failed"
                ].contains(errorName)
        }

        /// Sends a call; its answer goes to `call.done`, as does the connection's loss before it.
        private func send(_ call: Call, on session: Session) {
            nextCall += 1
            let id = nextCall
            inFlight[id] = call.done
            do {
                try session.connection.callAsync(call.request.method, call.request.arguments, timeout: call.timeout) {
                    [unowned self] message in
                    guard let done = inFlight.removeValue(forKey: id) else { return }
                    if let error = message.error(of: call.request.method.name) {
                        // On a bus, the daemon left the name: the next call looks for it again, elsewhere too.
                        let noDaemon = Self.noOwner.contains(error.name ?? "")
                        if noDaemon { session.connection.close() }
                        done(.failure(Failure(description: error.remoteMessage ?? "\(error)", isNoDaemon: noDaemon)))
                    } else {
                        done(.success(message.string() ?? ""))
                    }
                }
            } catch {
                inFlight[id] = nil
                call.done(.failure(Failure(description: "\(error)")))
            }
        }

        private func failInFlight(_ failure: Failure) {
            let waiting = inFlight.values
            inFlight = [:]
            for done in waiting { done(.failure(failure)) }
        }
    }
}
