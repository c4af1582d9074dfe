import CLinuxShim
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// A thread of our own, for work that must not run on a shared pool: a thread
/// that enters another network namespace, or an event loop that sleeps in `poll`.
///
/// Each has a name (`ps -L`, `top -H`, gdb, perf): on Linux a new thread takes its
/// creator's, so a monitor started from Dispatch's pool would otherwise show as
/// `com.apple.root.default-qos`, a pool thread, though it is not one.
package final class DedicatedThread {
    /// What the library's and reachd's threads are called (docs/swift-libraries.md, docs/daemon.md).
    package enum Name: String, Sendable {
        /// A monitor's event loop: the kernel's messages, the path's evaluation.
        case monitor = "reach-monitor"
        /// A host name's lookup (getaddrinfo).
        case lookup = "reach-lookup"
        /// A connectivity probe's request.
        case probe = "reach-probe"
        /// The NAT64 prefix's discovery (`ipv4only.arpa`).
        case nat64 = "reach-nat64"
        /// `ReachabilityClient`'s connection to reachd.
        case client = "reach-client"
        /// Work done inside another network namespace.
        case namespace = "reach-netns"
    }

    private let name: Name
    private var thread = pthread_t()
    /// Let go of once it returns: a body that holds the thread's owner (a loop's `run`)
    /// would otherwise keep it, and all it holds, alive for as long as the owner holds the
    /// thread, which is for good.
    private var body: (() -> Void)?
    private var joined = false

    /// Starts `body` on a new thread called `name`.
    package init(_ name: Name, _ body: @escaping () -> Void) throws {
        self.name = name
        self.body = body
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { context in
                let this = Unmanaged<DedicatedThread>.fromOpaque(context!).takeRetainedValue()
                // At most 15 bytes (TASK_COMM_LEN): every name above fits.
                _ = reachd_name_thread(this.name.rawValue)
                this.body?()
                this.body = nil
                return nil
            }, context)
        guard created == 0 else {
            Unmanaged<DedicatedThread>.fromOpaque(context).release()
            throw Failure(errno: created)
        }
    }

    /// Runs `body` on a thread of its own that nobody joins: blocking work (a resolver,
    /// a probe). Not on Dispatch's shared pool, for two reasons. Queued there, it waits
    /// behind whatever else holds the pool (an app's own work, for as long as it likes).
    /// Blocked there, it holds the pool itself, and on Linux Swift's tasks run on that
    /// same pool (one thread per CPU): each lookup stuck on a silent DNS server stops
    /// every task in the process (reachd's trust checks) until libdispatch adds a
    /// thread, about one a second. Where no thread can be started (the process is at
    /// its limit), the shared pool runs it.
    package static func detach(_ name: Name, _ body: @escaping @Sendable () -> Void) {
        do {
            _ = try DedicatedThread(name, body)
        } catch {
            DispatchQueue.global().async(execute: body)
        }
    }

    /// A thread nobody will join cleans up after itself when it ends.
    deinit {
        if !joined { pthread_detach(thread) }
    }

    /// The thread could not be created (`pthread_create`'s error number).
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package let errno: Int32
        package var description: String { "\(SystemCallError("starting a thread", errno: Errno(rawValue: errno)))" }
    }

    /// Whether the caller runs on this thread.
    package var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the body to return. Call it once.
    package func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }
}
