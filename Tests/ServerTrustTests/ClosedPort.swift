import Glibc
import SystemCalls

/// A port on 127.0.0.1 that refuses connections for as long as it is held: a
/// socket bound to it that never listens.
///
/// A port bound and at once released (what this replaced) was free for anyone
/// during the test: under the parallel suite another test's server was given
/// it, or a connection's own source port (a self-connect), and a "refused"
/// test saw "connection reset by peer" instead. While this socket holds the
/// port the kernel hands it to no `bind(port 0)` and no outgoing connection.
/// It sets `SO_REUSEADDR`, so a test may still start its own server on the
/// port (NIO's bootstraps here, `openssl s_server` and `openssl ocsp` set it
/// too): a port that is down, then back.
final class ClosedPort: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemCallError("socket") }
        var on: Int32 = 1
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0
                    && bind(descriptor, address, length) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            let failure = SystemCallError("binding a port on 127.0.0.1")
            close(descriptor)
            throw failure
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
