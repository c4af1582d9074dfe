import SDBus
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The helper's runs on the loop, each with its deadline: one timer for all of them.
/// A run ends when its process exits (its pidfd is watched), whatever its pipes do.
final class HelperRuns {
    private final class Run {
        let process: HelperProcess
        /// A watch per pipe still open, and one on the process's exit.
        var watches: [ObjectIdentifier: EventLoop.Watch] = [:]
        let completion: (HelperProcess.Outcome) -> Void

        init(_ process: HelperProcess, completion: @escaping (HelperProcess.Outcome) -> Void) {
            (self.process, self.completion) = (process, completion)
        }

        func stopWatching(_ descriptor: OwnedDescriptor) { watches[ObjectIdentifier(descriptor)] = nil }
    }

    private var running: [Run] = []
    private let loop: EventLoop
    private let timer: EventLoop.Timer

    init(loop: EventLoop) throws(BusError) {
        self.loop = loop
        var fired: (() -> Void)?
        timer = try loop.timer { fired?() }
        fired = { [unowned self] in timerFired() }
    }

    /// Starts `arguments`; `completion` runs on the loop with the outcome, by the deadline (if any) at the latest.
    func start(
        _ executable: String, _ arguments: [String], within budget: Duration?, exitWatch: HelperProcess.ExitWatch = .pidfd,
        completion: @escaping (HelperProcess.Outcome) -> Void
    ) throws(TrustHelper.Failure) {
        let process = try HelperProcess(executable, arguments, deadline: budget.map { .now + $0 }, exitWatch: exitWatch)
        let run = Run(process, completion: completion)
        do {
            for descriptor in process.descriptors {
                run.watches[ObjectIdentifier(descriptor)] = try loop.onReadable(descriptor) { [unowned run] in
                    process.read(descriptor, ending: run.stopWatching)
                }
            }
            // Without a pidfd the timer looks for the exit (`timerFired`).
            if let exit = process.exitDescriptor {
                run.watches[ObjectIdentifier(exit)] = try loop.onReadable(exit) { [unowned self, unowned run] in
                    if process.reapIfExited(ending: run.stopWatching) { finish(run) }
                }
            }
        } catch {
            run.watches = [:]
            process.expire()
            // Killed: it exits at once, and the wait is for that alone.
            _ = process.runToEnd()
            throw .init(description: "\(error)")
        }
        running.append(run)
        armTimer()
    }

    private func finish(_ run: Run) {
        guard let index = running.firstIndex(where: { $0 === run }) else { return }
        running.remove(at: index)
        run.watches = [:]
        armTimer()
        run.completion(run.process.outcome)
    }

    /// Kills the runs past their deadline (they then exit and finish as any run), and
    /// finishes those without a pidfd that have exited.
    private func timerFired() {
        for run in running where run.process.deadline.map({ $0 <= .now }) == true { run.process.expire() }
        for run in running where run.process.exitDescriptor == nil && run.process.reapIfExited(ending: run.stopWatching) { finish(run) }
        armTimer()
    }

    /// For the next deadline, or sooner while a run without a pidfd is to be looked at.
    private func armTimer() {
        var pending = running.filter { !$0.process.isExpired }.compactMap(\.process.deadline)
        if running.contains(where: { $0.process.exitDescriptor == nil }) { pending.append(.now + HelperProcess.exitPollInterval) }
        guard let next = pending.min() else { return timer.disarm() }
        timer.arm(after: max(.zero, ContinuousClock.now.duration(to: next)))
    }
}
