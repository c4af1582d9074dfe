import ReachabilityCore
import Synchronization

/// A clock that moves only when the test says: timers expire exactly when they
/// should, however loaded the machine running the test is.
package final class VirtualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    package init() {}

    package var now: ContinuousClock.Instant { instant.withLock { $0 } }

    package func advance(by duration: Duration) {
        precondition(duration >= .zero, "a monotonic clock does not go back")
        instant.withLock { $0 += duration }
    }

    package func advance(to target: ContinuousClock.Instant) {
        instant.withLock { $0 = max($0, target) }
    }

    /// The clock as the monitor's components read it.
    package var loopClock: LoopClock { LoopClock { [self] in now } }
}
