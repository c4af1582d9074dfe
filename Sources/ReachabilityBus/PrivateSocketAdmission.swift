import CSystemd
import SDBus
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

extension PrivateSocket {
    /// Who gets in, and who is dropped: the bookkeeping of `ConnectionLimits`.
    final class Admission {
        let limits: ConnectionLimits
        let descriptorLimit: Int
        let log: (String) -> Void
        var sweep: EventLoop.Timer?
        /// Wakes the loop when a peer that said nothing may be sent signals (`BusConnection.mayBeSentUnasked`):
        /// its handler does nothing, the iteration runs the catch-up of every object served.
        var silentPeerGrace: EventLoop.Timer?
        /// On while a peer is authenticating or has gone: see `afterEachIteration(_:)`.
        var afterIteration: EventLoop.Switch?
        /// A peer went away since the last iteration.
        private var anyDisconnected = false
        /// The peers that had not finished authenticating at the last look.
        private var authenticating: [BusConnection] = []
        /// Armed for the earliest authentication deadline; a new peer must not postpone it.
        private var sweepArmed = false
        private var peers: [(connection: BusConnection, accepted: ContinuousClock.Instant)] = []
        private var lastRefusalLogged: [uid_t: ContinuousClock.Instant] = [:]
        /// Opened at start so that an accept queue can be emptied with no descriptor left.
        private var spare = Admission.openSpare()

        private static func openSpare() -> OwnedDescriptor? { try? .taking(open("/dev/null", O_RDONLY | O_CLOEXEC), "opening /dev/null") }

        init(limits: ConnectionLimits, descriptorLimit: Int, log: @escaping (String) -> Void) {
            self.limits = limits
            self.descriptorLimit = descriptorLimit
            self.log = log
        }

        /// Why a connection of `uid` on `descriptor` is not served, or nil. Root always is.
        func refusal(of uid: uid_t, descriptor: Int32) -> String? {
            guard uid != 0 else { return nil }
            let others = peers.filter { $0.connection.peerUID != 0 }
            if others.count(where: { $0.connection.peerUID == uid }) >= limits.perUser {
                return "more than \(limits.perUser) connections of one user"
            }
            if others.count >= limits.allUsers { return "more than \(limits.allUsers) connections of users other than root" }
            // Descriptors are handed out lowest first: this number says how many are open.
            if Int(descriptor) >= descriptorLimit - limits.reservedDescriptors {
                return "the last \(limits.reservedDescriptors) of \(descriptorLimit) descriptors are kept for root and the daemon"
            }
            return nil
        }

        /// Once per user per minute: a flood must not become a flood of log lines.
        func logRefusal(of uid: uid_t, _ reason: String) {
            let now = ContinuousClock.now
            lastRefusalLogged = lastRefusalLogged.filter { $0.value.duration(to: now) < .seconds(60) }
            guard lastRefusalLogged[uid] == nil else { return }
            lastRefusalLogged[uid] = now
            log("private socket: closed connections of uid \(uid == uid_t.max ? "unknown" : String(uid)): \(reason) (said once a minute)")
        }

        func admit(_ connection: BusConnection) {
            peers.removeAll { !$0.connection.isOpen }
            peers.append((connection, .now))
            authenticating.append(connection)
            afterIteration?.turn(on: true)
            if !sweepArmed {
                sweep?.arm(after: limits.authenticationTimeout)
                sweepArmed = true
            }
        }

        /// Processes what each peer that has just authenticated sent with its `BEGIN`.
        ///
        /// sd-bus reads the authentication lines with whatever follows them, so a client
        /// that writes `BEGIN` and its first messages at once (dbus-send, GDBus, a raw
        /// client) leaves them in sd-bus's buffer, which sd-bus parses only when the
        /// socket is readable again: never, for a client that waits for the answer (with
        /// libsystemd 252, `dbus-send` hung 8 times in 10). After the loop iteration in
        /// which a peer authenticated, its buffer is processed to the end — before the
        /// objects' catch-up looks at it, so that Hello's reply is the first thing it is sent.
        private func processAuthenticated() {
            var waiting: [BusConnection] = []
            let now = ContinuousClock.now
            for connection in authenticating where connection.isOpen {
                guard connection.isReady else {
                    waiting.append(connection)
                    continue
                }
                connection.authenticatedAt = now
                while (try? connection.process()) == true {}
                if !connection.mayBeSentUnasked { silentPeerGrace?.arm(after: BusConnection.silentPeerGrace) }
            }
            authenticating = waiting
        }

        /// A peer went away (called inside sd-bus's processing of its connection).
        func disconnected() {
            anyDisconnected = true
            afterIteration?.turn(on: true)
        }

        /// After each loop iteration while needed: what came with a peer's `BEGIN` is
        /// processed, and peers that went away are let go at once — not at the next
        /// change of the path, which may never come: each holds sd-bus's buffers (a
        /// client connecting and leaving 2,737 times grew reachd by 26 MiB before).
        func afterEachIteration(_ object: ReachabilityObject) {
            processAuthenticated()
            if anyDisconnected {
                anyDisconnected = false
                peers.removeAll { !$0.connection.isOpen }
                object.forgetClosedConnections()
            }
            if authenticating.isEmpty { afterIteration?.turn(on: false) }
        }

        /// Closes peers that have not finished authenticating in time.
        func dropUnauthenticated() {
            let now = ContinuousClock.now
            var next: ContinuousClock.Instant?
            for (connection, accepted) in peers where connection.isOpen && !connection.isReady {
                let deadline = accepted + limits.authenticationTimeout
                if deadline <= now {
                    connection.close()
                    log(
                        "private socket: dropped a peer of uid \(connection.peerUID.map(String.init) ?? "?") that did not authenticate within \(limits.authenticationTimeout)"
                    )
                } else {
                    next = min(next ?? deadline, deadline)
                }
            }
            peers.removeAll { !$0.connection.isOpen }
            sweepArmed = next != nil
            if let next { sweep?.arm(after: now.duration(to: next)) }
        }

        /// No descriptor left even for accept: take the spare, accept and close one
        /// connection, and keep the spare again, so the queue drains instead of
        /// waking the loop forever.
        func shed(_ listener: Int32) {
            spare = nil
            // Accepted and closed at once.
            _ = try? OwnedDescriptor.taking(accept(listener, nil, nil), "accepting")
            spare = Self.openSpare()
            logRefusal(of: uid_t.max - 1, "no descriptor left (\(Errno.tooManyOpenFiles))")
        }
    }
}
