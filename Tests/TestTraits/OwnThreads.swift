import Dispatch
import Testing

extension Trait where Self == OwnThreadsTrait {
    /// For suites that run programs and wait for them (`ip`, openssl, busctl, a
    /// daemon): their tests run on threads of their own, so their waits cannot hold
    /// the threads every other suite's tasks run on.
    public static var ownThreads: Self { OwnThreadsTrait() }
}

/// Runs each test of a suite with ``BlockingWaitExecutor`` as its task executor.
///
/// Swift's tasks share a cooperative pool of one thread per CPU. A test that waits
/// for a program synchronously (`Process.waitUntilExit`, reading a pipe to its end)
/// holds one of those threads for as long: on a two-CPU machine, two suites creating
/// namespaces stopped every other suite for seconds, and tests that allow a bounded
/// time for an answer (an OCSP responder's, a daemon's first path) failed for time
/// spent queued, not for anything the code under test did.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(BlockingWaitExecutor.shared, operation: function)
    }
}

/// A task executor whose jobs may block: each job runs on a serial dispatch queue
/// of its own. Serial queues draw on libdispatch's overcommitting pool, which starts
/// another thread when every one of its threads is busy; the cooperative pool never
/// does. Child tasks (`async let`, task groups) inherit the preference; `Task {}`
/// does not, and runs on the shared pool.
public final class BlockingWaitExecutor: TaskExecutor {
    public static let shared = BlockingWaitExecutor()

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        DispatchQueue(label: "io.reachd.tests.blocking-wait").async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
