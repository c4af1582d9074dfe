import ReachabilityBus
#if canImport(Glibc)
import Glibc
#endif

/// The helper's runs on the loop, each with its deadline: one timer for all of them.
final class HelperRuns {
    private var running: [(process: HelperProcess, watches: [EventLoop.Watch], completion: (HelperProcess.Outcome) -> Void)] = []
    private let loop: EventLoop
    private let timer: EventLoop.Timer

    init(loop: EventLoop) throws(BusError) {
        self.loop = loop
        var expire: (() -> Void)?
        timer = try loop.timer { expire?() }
        expire = { [unowned self] in expireOverdue() }
    }

    /// Starts `arguments`; `completion` runs on the loop with the outcome, by the deadline (if any) at the latest.
    func start(_ executable: String, _ arguments: [String], within budget: Duration?,
               completion: @escaping (HelperProcess.Outcome) -> Void) throws(TrustHelper.Failure) {
        let process = try HelperProcess(executable, arguments, deadline: budget.map { .now + $0 })
        var watches: [EventLoop.Watch] = []
        do {
            for descriptor in process.descriptors {
                watches.append(try loop.onReadable(descriptor) { [unowned self] in
                    if process.read(descriptor) { finish(process) }
                })
            }
        } catch {
            watches.forEach { $0.cancel() }
            process.expire()
            _ = process.reap()
            throw .init(description: "\(error)")
        }
        running.append((process, watches, completion))
        armTimer()
    }

    private func finish(_ process: HelperProcess) {
        guard let index = running.firstIndex(where: { $0.process === process }) else { return }
        let run = running.remove(at: index)
        run.watches.forEach { $0.cancel() }
        armTimer()
        run.completion(process.reap())
    }

    /// Kills the runs past their deadline; their pipes then end and they finish as any run.
    private func expireOverdue() {
        for run in running where run.process.deadline.map({ $0 <= .now }) == true { run.process.expire() }
        armTimer()
    }

    private func armTimer() {
        let pending = running.filter { !$0.process.isExpired }.compactMap(\.process.deadline)
        guard let next = pending.min() else { return timer.disarm() }
        timer.arm(after: max(.zero, ContinuousClock.now.duration(to: next)))
    }
}
