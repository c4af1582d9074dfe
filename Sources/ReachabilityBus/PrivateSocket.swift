import CLinuxShim
import CSystemd
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The private socket: a listening AF_UNIX socket whose every accepted
/// connection is served the object peer-to-peer, so reachd works without a bus
/// broker. Everyone may connect (mode 0666); root-only methods check the peer.
package final class PrivateSocket {
    package let path: String
    private let descriptor: OwnedDescriptor
    /// The listener's watch, from `serve` on.
    private var watch: EventLoop.Watch?

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
    package static func verifyOwnDirectory(of socketPath: String) throws(SystemCallError) {
        let directory = fallbackDirectory
        guard socketPath == "\(directory)/bus" else { return }
        var status = stat()
        guard lstat(directory, &status) == 0 else { throw SystemCallError("checking \(directory)") }
        let user = geteuid()
        if status.st_mode & S_IFMT != S_IFDIR {
            throw SystemCallError(
                "\(directory) is not a directory (a link or a file someone else may have put there): refusing it",
                errno: Errno(rawValue: ENOTDIR))
        }
        if status.st_uid != user {
            throw SystemCallError(
                "\(directory) belongs to uid \(status.st_uid), not to uid \(user): refusing a socket directory another user created (remove it, or use --socket)",
                errno: Errno(rawValue: EPERM))
        }
        if status.st_mode & 0o022 != 0 {
            throw SystemCallError(
                "\(directory) is writable by other users (mode \(String(status.st_mode & 0o777, radix: 8))): refusing it",
                errno: Errno(rawValue: EPERM))
        }
    }

    /// Binds `path`, replacing a stale socket left by a previous run, and creating its directory.
    package init(path: String) throws(SystemCallError) {
        self.path = path
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try Self.makeDirectories(String(path[..<slash]))
        }
        try Self.verifyOwnDirectory(of: path)
        descriptor = try .taking(
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0),
            "creating \(path)")
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw SystemCallError("binding \(path) (longer than \(capacity - 1) bytes)", errno: Errno(rawValue: ENAMETOOLONG))
        }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path.utf8)
            bytes[path.utf8.count] = 0
        }
        unlink(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor.rawValue, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, chmod(path, 0o666) == 0, listen(descriptor.rawValue, 64) == 0 else {
            throw SystemCallError("listening on \(path)")
        }
    }

    deinit { unlink(path) }

    /// Serves `object` on every connection accepted from now on, within `limits`.
    package func serve(
        _ object: ReachabilityObject, on loop: EventLoop, limits: ConnectionLimits = ConnectionLimits(),
        log: @escaping (String) -> Void
    ) throws(BusError) {
        let admission = Admission(limits: limits, descriptorLimit: limits.raiseDescriptorLimit(), log: log)
        admission.sweep = try loop.timer { admission.dropUnauthenticated() }
        admission.afterIteration = try loop.afterEachIteration(first: true) { admission.afterEachIteration(object) }
        admission.silentPeerGrace = try loop.timer {}
        object.limits = limits
        object.log = log
        let listener = descriptor.rawValue
        watch = try loop.onReadable(descriptor) {
            while true {
                let peer = reachd_accept(listener)
                guard peer >= 0 else {
                    if errno == EMFILE || errno == ENFILE { admission.shed(listener) }
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
                    connection.onDisconnect = { admission.disconnected() }
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

    static func makeDirectories(_ directory: String) throws(SystemCallError) {
        var partial = ""
        for component in directory.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o755) != 0 && errno != EEXIST { throw SystemCallError("creating \(partial)") }
        }
    }
}
