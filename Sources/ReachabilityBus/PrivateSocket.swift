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

    /// The socket's default place (CONTRACT.md): the service's RuntimeDirectory
    /// under systemd, `/run/reachd/bus` as root, else `$XDG_RUNTIME_DIR/reachd/bus`,
    /// else `/tmp/reachd-$UID/bus`.
    package static var defaultPath: String {
        func environment(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let runtime = environment("RUNTIME_DIRECTORY") { return "\(runtime.split(separator: ":").first ?? "/run/reachd")/bus" }
        if getuid() == 0 { return "/run/reachd/bus" }
        if let runtime = environment("XDG_RUNTIME_DIR") { return "\(runtime)/reachd/bus" }
        return "/tmp/reachd-\(getuid())/bus"
    }

    /// Binds `path`, replacing a stale socket left by a previous run, and creating its directory.
    package init(path: String) throws(BusError) {
        self.path = path
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try Self.makeDirectories(String(path[..<slash]))
        }
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

    /// Serves `object` on every connection accepted from now on.
    package func serve(_ object: ReachabilityObject, on loop: EventLoop, log: @escaping (String) -> Void) throws(BusError) {
        try loop.onReadable(descriptor) { [descriptor] in
            while true {
                // accept4 needs _GNU_SOURCE; the flags are set right after.
                let peer = accept(descriptor, nil, nil)
                guard peer >= 0 else { return }
                _ = fcntl(peer, F_SETFD, FD_CLOEXEC)
                _ = fcntl(peer, F_SETFL, O_NONBLOCK)
                do {
                    let connection = try BusConnection.serve(acceptedSocket: peer)
                    try connection.attach(to: loop)
                    try object.serve(on: connection)
                } catch {
                    log("private socket: \(error)")
                }
            }
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
