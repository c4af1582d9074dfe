import Testing

extension Trait where Self == MachineAloneTrait {
    /// For suites that load the machine (a fuzzer, thousands of clients) and for those
    /// whose expectations hold only on a machine that is not saturated (subscribers that
    /// must keep up within seconds): no two suites marked so run at the same time.
    public static var machineAlone: Self { MachineAloneTrait() }
}

/// Runs a suite while no other suite with this trait runs. On a two-CPU machine the bus
/// fuzzer beside the publish-convergence test starved its `reachctl watch` readers for
/// seconds, and a reader that falls behind is rightly sent only the latest document — so
/// the test failed for the machine, not for the code.
public struct MachineAloneTrait: SuiteTrait, TestScoping {
    public var isRecursive: Bool { false }

    /// Set while this task holds the machine: a scope asked for again inside it (a test of a
    /// suite that holds it) runs at once.
    @TaskLocal static var holding = false

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        if Self.holding { return try await function() }
        await MachineLock.shared.acquire()
        do {
            try await Self.$holding.withValue(true) { try await function() }
        } catch {
            await MachineLock.shared.release()
            throw error
        }
        await MachineLock.shared.release()
    }
}

/// One holder at a time, the others waiting in order.
actor MachineLock {
    static let shared = MachineLock()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
