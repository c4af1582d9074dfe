import CLinuxShim
import CSystemd
import CSystemdShim
import ReachabilityContract
import SDBus
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

    /// Binds `path`, replacing a stale socket left by a previous run, and creating its directory.
    package init(path: String) throws(SystemCallError) {
        self.path = path
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try Self.makeDirectories(String(path[..<slash]))
        }
        try PrivateSocketPlace.verifyOwnDirectory(of: path)
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

    /// Waits for the next peer and serves it the broker stub alone: no object, no
    /// admission, no limits. reachability-bench's bare relay publishes through it,
    /// to measure the floor under reachd's own path (BENCHMARKS.md §27); reachd
    /// serves every peer through `serve`.
    package func acceptBarePeer() throws -> BusConnection {
        var readable = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        while true {
            let peer = reachd_accept(descriptor.rawValue)
            if peer >= 0 {
                let connection = try BusConnection.serve(acceptedSocket: peer)
                try connection.serveBrokerStub()
                return connection
            }
            guard errno == EAGAIN || errno == EINTR else { throw SystemCallError("accepting on \(path)") }
            _ = poll(&readable, 1, -1)
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

extension BusConnection {
    /// Answers what a client sends a bus broker (`Hello`, `AddMatch`, …) on a
    /// peer-to-peer connection, so that clients written for a bus work unchanged.
    func serveBrokerStub() throws(BusError) {
        var broker: OpaquePointer?
        try check(reachd_bus_add_broker(bus, &broker), "serving the broker stub")
        slots.append(broker!)
    }
}
