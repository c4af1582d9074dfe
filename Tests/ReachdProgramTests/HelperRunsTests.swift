import SDBus
import TestTraits
import Testing

@testable import ReachdProgram

#if canImport(Glibc)
import Glibc
#endif

/// The helper's runs on a real event loop and real processes (`/bin/sh`): no root, no kernel
/// state. What is proven is what the daemon relies on — the loop never waits for a child —
/// with the end seen through a pidfd and, as where there is none, polled.
@Suite("Helper runs: the loop never waits for a child", .ownThreads)
struct HelperRunsTests {
    /// Runs `arguments` on a fresh loop with a 20 ms ticker beside it, until the run completes.
    private func runOnLoop(
        _ arguments: [String], within budget: Duration?, _ exitWatch: HelperProcess.ExitWatch
    ) throws -> (HelperProcess.Outcome, elapsed: Duration, ticks: Int) {
        let loop = try EventLoop()
        let runs = try HelperRuns(loop: loop)
        var ticks = 0
        var ticker: EventLoop.Timer?
        ticker = try loop.timer {
            ticks += 1
            ticker?.arm(after: .milliseconds(20))
        }
        ticker?.arm(after: .milliseconds(20))
        var outcome: HelperProcess.Outcome?
        let started = ContinuousClock.now
        try runs.start("/bin/sh", ["-c"] + arguments, within: budget, exitWatch: exitWatch) {
            outcome = $0
            loop.exit(0)
        }
        _ = try loop.run()
        return (try #require(outcome), started.duration(to: .now), ticks)
    }

    @Test(
        "a helper that closes its pipes and hangs is killed at its deadline, and the loop runs meanwhile",
        arguments: HelperProcess.ExitWatch.allCases)
    func closesPipesAndHangs(_ exitWatch: HelperProcess.ExitWatch) throws {
        let (outcome, elapsed, ticks) = try runOnLoop(["exec >&- 2>&- </dev/null; exec sleep 20"], within: .milliseconds(600), exitWatch)
        #expect(outcome.timedOut && outcome.status == 128 + SIGKILL, "\(outcome)")
        #expect(elapsed < .seconds(5), "finished \(elapsed) after it started: the deadline held")
        // The loop was not frozen: a loop blocked on the child until the kill would fire its
        // 20 ms timer at most once (the pending expiry, handled with the exit) before the outcome,
        // since the timer re-arms only when it runs. Unloaded it fires about 30 times; a loaded
        // test run has been seen to schedule it only 4 times in the 600 ms, hence the count of 2.
        #expect(ticks >= 2, "\(ticks) ticks")
    }

    @Test(
        "a helper whose own child holds its pipes ends when the helper exits, with what it wrote",
        arguments: HelperProcess.ExitWatch.allCases)
    func childHoldsPipes(_ exitWatch: HelperProcess.ExitWatch) throws {
        let (outcome, elapsed, _) = try runOnLoop(["echo answer; echo warning >&2; sleep 8 & exit 3"], within: .seconds(10), exitWatch)
        #expect(!outcome.timedOut && outcome.status == 3, "\(outcome)")
        #expect(String(decoding: outcome.output, as: UTF8.self) == "answer\n")
        #expect(String(decoding: outcome.errors, as: UTF8.self) == "warning\n")
        #expect(elapsed < .seconds(5), "\(elapsed)")
    }

    @Test("both pipes are read as they come: 1 MB on each, neither blocks the other", arguments: HelperProcess.ExitWatch.allCases)
    func bothPipesAtOnce(_ exitWatch: HelperProcess.ExitWatch) throws {
        let (outcome, _, _) = try runOnLoop(
            ["head -c 1000000 /dev/zero; head -c 1000000 /dev/zero >&2; exit 0"], within: .seconds(20), exitWatch)
        #expect(outcome.status == 0 && !outcome.timedOut)
        #expect(outcome.output.count == 1_000_000 && outcome.errors.count == 1_000_000)
    }

    @Test(
        "without a loop (at start), a helper that closes its pipes and hangs is killed at its deadline",
        arguments: HelperProcess.ExitWatch.allCases)
    func runToEndHonoursDeadline(_ exitWatch: HelperProcess.ExitWatch) throws {
        let started = ContinuousClock.now
        let process = try HelperProcess(
            "/bin/sh", ["-c", "exec >&- 2>&-; exec sleep 20"], deadline: .now + .milliseconds(300), exitWatch: exitWatch)
        let outcome = process.runToEnd()
        #expect(outcome.timedOut && outcome.status == 128 + SIGKILL, "\(outcome)")
        #expect(started.duration(to: .now) < .seconds(5))
        let answered = try HelperProcess(
            "/bin/sh", ["-c", "echo ok; sleep 8 & exit 0"], deadline: .now + .seconds(10), exitWatch: exitWatch
        ).runToEnd()
        #expect(answered.status == 0 && String(decoding: answered.output, as: UTF8.self) == "ok\n", "\(answered)")
    }
}
