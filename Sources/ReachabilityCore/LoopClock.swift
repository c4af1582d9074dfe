/// The time a loop's decisions are made at. The system's monotonic clock in every
/// program; a test's virtual clock (`EmbeddedKernel`'s) where timers should expire
/// when the test says, not when the machine gets round to it.
package struct LoopClock {
    package var now: () -> ContinuousClock.Instant

    package init(now: @escaping () -> ContinuousClock.Instant) {
        self.now = now
    }

    /// `ContinuousClock`: keeps counting while the host sleeps, as the kernel's timers do.
    package static var system: LoopClock { LoopClock { .now } }
}
