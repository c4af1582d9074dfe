import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// A thread of our own, for work that must not run on a shared pool: a thread
/// that enters another network namespace, or an event loop that sleeps in `poll`.
package final class DedicatedThread {
    private var thread = pthread_t()
    /// Let go of once it returns: a body that holds the thread's owner (a loop's `run`)
    /// would otherwise keep it, and all it holds, alive for as long as the owner holds the
    /// thread, which is for good.
    private var body: (() -> Void)?
    private var joined = false

    /// Starts `body` on a new thread.
    package init(_ body: @escaping () -> Void) throws {
        self.body = body
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { context in
                let this = Unmanaged<DedicatedThread>.fromOpaque(context!).takeRetainedValue()
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
    package static func detach(_ body: @escaping @Sendable () -> Void) {
        do {
            _ = try DedicatedThread(body)
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
