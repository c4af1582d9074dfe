import SDBus
import Testing

/// The loop's timers carry the daemon's re-checks (0.25 ms after a route deletion),
/// its coalescing windows and its deadlines: each must fire when it is due.
@Suite("Event loop timers")
struct EventLoopTimerTests {
    @Test("a timer fires when due, not at sd-event's default 250 ms slack: 20 timers of 5 ms in turn")
    func firesWhenDue() throws {
        let loop = try EventLoop()
        var fired = 0
        var timer: EventLoop.Timer?
        timer = try loop.timer {
            fired += 1
            if fired == 20 { loop.exit(0) } else { timer?.arm(after: .milliseconds(5)) }
        }
        let started = ContinuousClock.now
        timer?.arm(after: .milliseconds(5))
        _ = try loop.run()
        // 100 ms when due; with the default accuracy each waits for the next 250 ms boundary (≈ 5 s).
        #expect(started.duration(to: .now) < .seconds(2), "\(started.duration(to: .now)) for 20 timers of 5 ms")
    }
}
