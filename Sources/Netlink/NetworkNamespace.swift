import CNetlinkShim
#if canImport(Glibc)
import Glibc
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
        try withoutActuallyEscaping({ result = Result { try body() } }) { work in
            try NamespaceThread(descriptor: descriptor, work: work).runToCompletion()
        }
        return try result!.get()
    }
}

/// A thread that enters a namespace, runs one piece of work, and ends.
private final class NamespaceThread {
    let descriptor: Int32
    let work: () -> Void
    var failure: NetlinkError?

    init(descriptor: Int32, work: @escaping () -> Void) {
        self.descriptor = descriptor
        self.work = work
    }

    func runToCompletion() throws {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            let this = Unmanaged<NamespaceThread>.fromOpaque(context!).takeRetainedValue()
            if reachd_enter_network_namespace(this.descriptor) == 0 {
                this.work()
            } else {
                this.failure = NetlinkError.lastSystemError("entering network namespace")
            }
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<NamespaceThread>.fromOpaque(context).release()
            throw NetlinkError.system(operation: "starting a namespace thread", errno: created)
        }
        pthread_join(thread, nil)
        if let failure { throw failure }
    }
}
