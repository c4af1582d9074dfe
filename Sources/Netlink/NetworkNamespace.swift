import CLinuxShim

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// A network namespace, by the path of a file that holds it open
/// (`/run/netns/NAME`, `/proc/PID/ns/net`).
///
/// Sockets are bound to the namespace of the thread that creates them, and
/// stay there. So the way into a namespace is: a fresh thread, `setns`, create
/// the sockets, end the thread. A pooled thread is never moved: whatever ran
/// on it next would silently run in the other namespace.
package struct NetworkNamespace: Sendable, Hashable, CustomStringConvertible {
    package let path: String

    package init(path: String) { self.path = path }

    /// A namespace created by `ip netns add NAME`.
    package init(name: String) { self.init(path: "/run/netns/\(name)") }

    package var description: String { path }

    /// Runs `body` on a new thread that has entered this namespace, and waits for it.
    package func perform<T>(_ body: () throws -> T) throws -> T {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw NetlinkError.lastSystemError("opening network namespace \(path)") }
        defer { close(descriptor) }
        var result: Result<T, any Error>?
        var entered: NetlinkError?
        try withoutActuallyEscaping({
            guard reachd_enter_network_namespace(descriptor) == 0 else {
                entered = NetlinkError.lastSystemError("entering network namespace \(path)")
                return
            }
            result = Result { try body() }
        }) { work in
            try DedicatedThread(.namespace, work).join()
        }
        if let entered { throw entered }
        return try result!.get()
    }
}
