import CLinuxShim
import CSystemd
#if canImport(Glibc)
import Glibc
#endif

/// The private socket: a listening AF_UNIX socket whose every accepted
/// connection is served the object peer-to-peer, so reachd works without a bus
/// broker. Everyone may connect (mode 0666); root-only methods check the peer.
package final class PrivateSocket {
    package let path: String
    let descriptor: Int32

    /// The socket's default place (docs/api.md, "Where the daemon is"): the service's RuntimeDirectory
    /// under systemd, `/run/reachd/bus` as root, else `$XDG_RUNTIME_DIR/reachd/bus`,
    /// else `/tmp/reachd-$UID/bus`.
    package static var defaultPath: String {
        func environment(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let runtime = environment("RUNTIME_DIRECTORY") { return "\(runtime.split(separator: ":").first ?? "/run/reachd")/bus" }
        if getuid() == 0 { return "/run/reachd/bus" }
        if let runtime = environment("XDG_RUNTIME_DIR") { return "\(runtime)/reachd/bus" }
        return "\(fallbackDirectory)/bus"
    }

    /// The last resort of `defaultPath`, in `/tmp`.
    static var fallbackDirectory: String { "/tmp/reachd-\(getuid())" }

    /// Refuses the `/tmp/reachd-$UID` fallback when it is not the user's own. Anyone
    /// may create it first: a daemon serving there, or a client connecting there,
    /// would share it with whoever did — who could put a socket of its own in it
    /// and answer for reachd. Other paths are the caller's choice.
    package static func verifyOwnDirectory(of socketPath: String) throws(BusError) {
        let directory = fallbackDirectory
        guard socketPath == "\(directory)/bus" else { return }
        var status = stat()
        guard lstat(directory, &status) == 0 else { throw BusError("checking \(directory)", code: errno) }
        let user = geteuid()
        if status.st_mode & S_IFMT != S_IFDIR {
            throw BusError("\(directory) is not a directory (a link or a file someone else may have put there): refusing it", code: ENOTDIR)
        }
        if status.st_uid != user {
            throw BusError("\(directory) belongs to uid \(status.st_uid), not to uid \(user): refusing a socket directory another user created (remove it, or use --socket)", code: EPERM)
        }
        if status.st_mode & 0o022 != 0 {
            throw BusError("\(directory) is writable by other users (mode \(String(status.st_mode & 0o777, radix: 8))): refusing it", code: EPERM)
        }
    }

    /// Binds `path`, replacing a stale socket left by a previous run, and creating its directory.
    package init(path: String) throws(BusError) {
        self.path = path
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try Self.makeDirectories(String(path[..<slash]))
        }
        try Self.verifyOwnDirectory(of: path)
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw BusError("creating \(path)", code: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            close(descriptor)
            throw BusError("binding \(path) (longer than \(capacity - 1) bytes)", code: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path.utf8)
            bytes[path.utf8.count] = 0
        }
        unlink(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o666) == 0, listen(descriptor, 64) == 0 else {
            let code = errno
            close(descriptor)
            throw BusError("listening on \(path)", code: code)
        }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Serves `object` on every connection accepted from now on, within `limits`.
    package func serve(_ object: ReachabilityObject, on loop: EventLoop, limits: ConnectionLimits = ConnectionLimits(),
                       log: @escaping (String) -> Void) throws(BusError) {
        let admission = Admission(limits: limits, descriptorLimit: limits.raiseDescriptorLimit(), log: log)
        admission.sweep = try loop.timer { admission.dropUnauthenticated() }
        object.limits = limits
        object.log = log
        try loop.onReadable(descriptor) { [descriptor] in
            while true {
                let peer = reachd_accept(descriptor)
                guard peer >= 0 else {
                    if errno == EMFILE || errno == ENFILE { admission.shed(descriptor) }
                    return
                }
                let uid = Self.peerUID(peer)
                if let refusal = admission.refusal(of: uid, descriptor: peer) {
                    close(peer)
                    admission.logRefusal(of: uid, refusal)
                    continue
                }
                do {
                    let connection = try BusConnection.serve(acceptedSocket: peer)
                    connection.peerUID = uid
                    try connection.attach(to: loop)
                    try object.serve(on: connection)
                    admission.admit(connection)
                } catch {
                    log("private socket: \(error)")
                }
            }
        }
    }

    /// The peer's user (SO_PEERCRED); one no user has when the kernel does not say.
    static func peerUID(_ socket: Int32) -> uid_t {
        var uid = uid_t.max
        return reachd_peer_uid(socket, &uid) == 0 ? uid : uid_t.max
    }

    /// Who gets in, and who is dropped: the bookkeeping of `ConnectionLimits`.
    final class Admission {
        let limits: ConnectionLimits
        let descriptorLimit: Int
        let log: (String) -> Void
        var sweep: EventLoop.Timer?
        /// Armed for the earliest authentication deadline; a new peer must not postpone it.
        private var sweepArmed = false
        private var peers: [(connection: BusConnection, accepted: ContinuousClock.Instant)] = []
        private var lastRefusalLogged: [uid_t: ContinuousClock.Instant] = [:]
        /// Opened at start so that an accept queue can be emptied with no descriptor left.
        private var spare = open("/dev/null", O_RDONLY | O_CLOEXEC)

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
            if !sweepArmed {
                sweep?.arm(after: limits.authenticationTimeout)
                sweepArmed = true
            }
        }

        /// Closes peers that have not finished authenticating in time.
        func dropUnauthenticated() {
            let now = ContinuousClock.now
            var next: ContinuousClock.Instant?
            for (connection, accepted) in peers where connection.isOpen && !connection.isReady {
                let deadline = accepted + limits.authenticationTimeout
                if deadline <= now {
                    connection.close()
                    log("private socket: dropped a peer of uid \(connection.peerUID.map(String.init) ?? "?") that did not authenticate within \(limits.authenticationTimeout)")
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
            close(spare)
            let peer = accept(listener, nil, nil)
            if peer >= 0 { close(peer) }
            spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
            logRefusal(of: uid_t.max - 1, "no descriptor left (\(String(cString: strerror(EMFILE))))")
        }
    }

    static func makeDirectories(_ directory: String) throws(BusError) {
        var partial = ""
        for component in directory.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o755) != 0 && errno != EEXIST { throw BusError("creating \(partial)", code: errno) }
        }
    }
}
