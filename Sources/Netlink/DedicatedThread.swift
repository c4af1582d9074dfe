#if canImport(Glibc)
import Glibc
#endif

/// A thread of our own, for work that must not run on a shared pool: a thread
/// that enters another network namespace, or an event loop that sleeps in `poll`.
package final class DedicatedThread {
    private var thread = pthread_t()
    private let body: () -> Void
    private var joined = false

    /// Starts `body` on a new thread.
    package init(_ body: @escaping () -> Void) throws {
        self.body = body
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            let this = Unmanaged<DedicatedThread>.fromOpaque(context!).takeRetainedValue()
            this.body()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<DedicatedThread>.fromOpaque(context).release()
            throw NetlinkError.system(operation: "starting a thread", errno: created)
        }
    }

    /// Waits for the body to return. Call it once.
    package func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }
}
