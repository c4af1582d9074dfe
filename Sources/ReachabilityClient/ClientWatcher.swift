import FoundationEssentials
import ReachabilityBus
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

extension ReachabilityClient {
    /// A subscription's thread: connect, read the state, follow the signal that
    /// carries its changes; on any loss, back off and start over.
    final class Watcher: @unchecked Sendable {
        /// What the watcher follows.
        enum Mode {
            /// StatusChanged: the path, for every `paths` and `onChange` subscriber.
            case paths
            /// InterfaceChanged, for one `interfaceChanges` stream.
            case interfaces(InterfaceChangeStream.Buffer)
            /// PathChanged of one `WatchPath()` watch, for one `paths(to:interfaceTypes:)` stream.
            case watch(PathWatchRequest, AsyncStream<Path>.Continuation)
            /// TrustChanged, for one `trustChanges` stream.
            case trust(AsyncStream<TrustStatus>.Continuation)
            /// PinFailure, for one `pinFailures` stream: events, nothing to read first.
            case pinFailures(AsyncStream<PinFailure>.Continuation)
        }

        /// Strong: subscribers keep their client alive; the last one to leave stops the watcher.
        let client: ReachabilityClient
        let mode: Mode
        /// The interfaces as last delivered, by index (interfaces mode).
        private var known: [Int: InterfaceChange] = [:]
        private var deliveredInventory = false
        private let stopped = Atomic<Bool>(false)
        private let wake: WakePipe?
        /// What was last delivered (paths, watch and trust modes): nothing is delivered twice.
        private var last: Path?
        private var lastTrust: TrustStatus?
        private var thread: DedicatedThread?

        init(client: ReachabilityClient, mode: Mode = .paths) {
            self.client = client
            self.mode = mode
            wake = try? WakePipe()
        }

        func start() {
            // No thread means no subscription: say so rather than fail silently.
            do {
                guard wake != nil else { throw Failure(description: "no wake-up pipe") }
                thread = try DedicatedThread { [self] in run() }
            } catch {
                var line = "ReachabilityClient: cannot start its thread: \(error)\n"
                line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
            }
        }

        func stop() {
            stopped.store(true, ordering: .sequentiallyConsistent)
            wake?.signal()
        }

        private var isStopped: Bool { stopped.load(ordering: .sequentiallyConsistent) }

        private func offer(_ path: Path) {
            if let last, last.isSamePath(as: path) { return }
            let initial = last == nil
            last = path
            switch mode {
            case let .watch(_, continuation): PathStreams.Delivery(continuation: continuation, first: initial).send(path)
            default: client.deliver(path, initial: initial)
            }
        }

        private func offer(_ status: TrustStatus, to continuation: AsyncStream<TrustStatus>.Continuation) {
            guard status != lastTrust else { return }
            lastTrust = status
            continuation.yield(status)
        }

        private func run() {
            var delay = client.reconnectDelays.first
            while !isStopped {
                do {
                    try followOnce()
                    delay = client.reconnectDelays.first
                } catch {
                    // The daemon is not (or no longer) there: try again later.
                    if case .paths = mode { client.connectionChanged(to: .noDaemon(reason: "\(error)"), by: self) }
                    sleep(for: delay)
                    delay = min(delay * 2, client.reconnectDelays.last)
                }
            }
            switch mode {
            case let .watch(_, continuation): continuation.finish()
            case let .trust(continuation): continuation.finish()
            case let .pinFailures(continuation): continuation.finish()
            case .paths, .interfaces: break
            }
        }

        /// One connection's life, for what the mode follows.
        private func followOnce() throws {
            switch mode {
            case .paths:
                try follow(
                    "StatusChanged", reading: "Describe", answer: { [self] in offer(try ReachabilityClient.decode($0)) },
                    signal: { [self] _, document in (try? ReachabilityClient.decode(document)).map(offer) })
            case let .interfaces(buffer):
                try followInterfaces(into: buffer)
            case let .watch(request, _):
                try follow(
                    "PathChanged", reading: "WatchPath", arguments: [request.destination, request.interfaceTypesText],
                    answer: { [self] in offer(try ReachabilityClient.decode($0)) },
                    signal: { [self] key, document in
                        guard key == request.key else { return }
                        (try? ReachabilityClient.decode(document)).map(offer)
                    })
            case let .trust(continuation):
                try follow(
                    "TrustChanged", reading: "TrustStatus",
                    answer: { [self] in offer(try ReachabilityClient.decodeTrust($0), to: continuation) },
                    signal: { [self] _, document in (try? ReachabilityClient.decodeTrust(document)).map { offer($0, to: continuation) } })
            case let .pinFailures(continuation):
                try follow(
                    "PinFailure", reading: nil, answer: { _ in },
                    signal: { report, _ in (try? PinFailure(json: report)).map { _ = continuation.yield($0) } })
            }
        }

        /// One connection's life for `interfaceChanges`: the inventory from
        /// WatchInterfaces, then each InterfaceChanged newer than it. After a
        /// reconnection the inventory is compared with what was delivered: what
        /// changed meanwhile is delivered, and what vanished as removed.
        private func followInterfaces(into buffer: InterfaceChangeStream.Buffer) throws {
            try follow(
                "InterfaceChanged", reading: "WatchInterfaces",
                answer: { [self] inventory in
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
                }, signal: { [self] _, document in (try? InterfaceChange(json: document)).map { deliver($0, to: buffer) } })
        }

        /// One connection's life: returns when it ends. Subscribes to `member`, then
        /// calls `method` with `arguments` (`Describe` is the one `connect` already
        /// called; nil reads nothing) and hands its answer to `answer` — again when, on
        /// a bus, the daemon's name changes owner (a restart behind the same connection;
        /// on the private socket a restart closes the connection instead).
        ///
        /// Signals that arrived while the method was answered are queued behind its
        /// reply but were sent before it: they are older than the answer, and are
        /// skipped (by serial), or the subscriber would end on an earlier state.
        private func follow(
            _ member: String, reading method: String?, arguments: [String] = [],
            answer: @escaping (String) throws -> Void, signal: @escaping (String, String) -> Void
        ) throws {
            var answered = method == nil ? 0 : UInt64.max
            var refresh = method != nil && method != "Describe"
            let (session, document, serial) = try client.connect { session in
                try session.connection.onSignal(
                    sender: session.signalSender, path: "/io/reachd/Reachability1",
                    interface: ReachabilityClient.name, member: member,
                    twoArguments: member != "PinFailure"
                ) { first, second, serial in
                    guard serial > answered else { return }
                    signal(first, second ?? "")
                }
                try session.connection.onSignal(
                    sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                    twoArguments: false
                ) { name, _, _ in
                    guard name == ReachabilityClient.name else { return }
                    // A new daemon numbers its messages from 1 again.
                    answered = 0
                    refresh = method != nil
                }
            }
            if case .paths = mode { client.connectionChanged(to: .connected(to: session.endpoint), by: self) }
            if method == "Describe" {
                answered = serial
                try answer(document)
            }
            try pump(session) {
                guard refresh, let method else { return }
                refresh = false
                // The name may have no owner for a moment: failing here means reconnecting.
                let (fresh, serial) = try session.connection.callWithSerial(
                    method, arguments, destination: session.destination,
                    timeout: .seconds(5))
                answered = serial
                try answer(fresh ?? "")
            }
        }

        private func deliver(_ entry: InterfaceChange, to buffer: InterfaceChangeStream.Buffer) {
            if entry.removed { known[entry.index] = nil } else { known[entry.index] = entry }
            buffer.put(entry)
        }

        /// Reads the connection until it closes or the watcher stops; `refresh` runs before each wait.
        private func pump(_ session: Session, _ refresh: () throws -> Void) throws {
            let connection = session.connection
            while !isStopped {
                while try connection.process() {}
                try refresh()
                guard connection.isOpen else { throw ReachabilityClient.Failure(description: "the connection closed") }
                let request = connection.pollRequest
                var descriptors = [
                    pollfd(fd: connection.fileDescriptor, events: request.events, revents: 0),
                    pollfd(fd: wake!.readEnd.rawValue, events: Int16(POLLIN), revents: 0)
                ]
                let timeout =
                    request.deadline.map { deadline -> Int32 in
                        let remaining = ContinuousClock.now.duration(to: deadline)
                        return Int32(
                            clamping: max(0, remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
                        )
                    } ?? -1
                _ = poll(&descriptors, 2, timeout)
            }
        }

        private func sleep(for delay: Duration) {
            var descriptor = pollfd(fd: wake!.readEnd.rawValue, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
            _ = poll(&descriptor, 1, milliseconds)
        }
    }
}
