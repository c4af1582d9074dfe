import ReachabilityCore

/// When each way out but the path's own is probed, and what each was found to be
/// (docs/connectivity.md, "Every way out"). Loop-free: the owner supplies the timer,
/// the clock and a way to start one probe, and brings each verdict back into `finish`.
///
/// A way out is an available interface that is no tunnel, as a path of its own (the
/// engine's `waysOut()`). It is probed when it appears or leaves another way than
/// before, and again once per interval; never more than once per interval, however
/// often it flaps. One with no route to the probes is `none` without a probe. The
/// path's own interface is the path's probe's to judge, and while the path goes
/// through a VPN nothing is probed outside the tunnel.
package final class WaysOutScheduler {
    private struct Entry {
        var wayOut: Path
        var verdict: Connectivity?
        var generation: Int
        var due: ContinuousClock.Instant?
        var running = false
    }

    private let timer: TrustScheduler.Timer
    private let now: () -> ContinuousClock.Instant
    private let start: (_ wayOut: Path, _ generation: Int) -> Void
    private var interval: Duration
    private var entries: [Int32: Entry] = [:]
    /// When each interface was last probed, kept after it goes: a flapping interface is
    /// probed no more often than a steady one. Forgotten an interval later.
    private var lastStarted: [Int32: ContinuousClock.Instant] = [:]
    private var generation = 0

    package init(
        interval: Duration, timer: TrustScheduler.Timer, now: @escaping () -> ContinuousClock.Instant = { .now },
        start: @escaping (_ wayOut: Path, _ generation: Int) -> Void
    ) {
        self.interval = interval
        self.timer = timer
        self.now = now
        self.start = start
    }

    /// Each way out's verdict, by interface index: nil until its first probe answers.
    package func verdict(of index: Int) -> Connectivity? { entries[Int32(index)]?.verdict }

    /// The ways out as the path was last evaluated, the path's own left out (nothing when
    /// no probe is configured or the path goes through a VPN). Returns whether a published
    /// verdict changed (one went away, or was forgotten because its way out moved).
    @discardableResult
    package func update(_ waysOut: [Path]) -> Bool {
        // Every evaluation comes here: one that moves no way out costs no timer call.
        guard !(waysOut.isEmpty && entries.isEmpty) else { return false }
        var changed = false
        var moved = false
        let fresh = Dictionary(waysOut.compactMap { wayOut in wayOut.interface.map { (Int32($0.index), wayOut) } }) { first, _ in first }
        for (index, entry) in entries where fresh[index] == nil {
            entries[index] = nil
            moved = true
            changed = changed || entry.verdict != nil
        }
        for (index, wayOut) in fresh {
            if let entry = entries[index], entry.wayOut.leavesTheSameWay(as: wayOut) { continue }
            moved = true
            generation += 1
            changed = changed || entries[index]?.verdict != nil
            if !wayOut.status.isReachable {
                entries[index] = Entry(wayOut: wayOut, verdict: Connectivity.none, generation: generation)
                changed = true
                continue
            }
            entries[index] = Entry(wayOut: wayOut, verdict: nil, generation: generation, due: earliestStart(of: index))
        }
        if moved { startDue() }
        return changed
    }

    /// The interval changed (a reload): what was found stands; the next probes follow it.
    package func reconfigure(interval: Duration) { self.interval = interval }

    /// Everything found is forgotten and every way out probed again as soon as the
    /// interval allows (the host slept, `CheckConnectivity()`).
    package func forgetVerdicts() {
        for index in entries.keys where entries[index]!.wayOut.status.isReachable {
            generation += 1
            entries[index]!.verdict = nil
            entries[index]!.generation = generation
            entries[index]!.due = earliestStart(of: index)
        }
        startDue()
    }

    package func timerFired() { startDue() }

    /// A probe answered. Returns whether the verdict changed (false for one of a way
    /// out that moved or went meanwhile).
    package func finish(_ index: Int32, _ finished: Int, _ verdict: Connectivity) -> Bool {
        guard var entry = entries[index], entry.generation == finished else { return false }
        entry.running = false
        let changed = entry.verdict != verdict
        entry.verdict = verdict
        entry.due = earliestStart(of: index)
        entries[index] = entry
        armNext()
        return changed
    }

    private func earliestStart(of index: Int32) -> ContinuousClock.Instant {
        max(now(), lastStarted[index].map { $0 + interval } ?? now())
    }

    private func startDue() {
        let now = now()
        lastStarted = lastStarted.filter { $0.value + interval > now }
        for (index, entry) in entries where !entry.running {
            guard let due = entry.due, due <= now else { continue }
            entries[index]!.running = true
            entries[index]!.due = nil
            lastStarted[index] = now
            start(entry.wayOut, entry.generation)
        }
        armNext()
    }

    private func armNext() {
        guard let next = entries.values.compactMap(\.due).min() else { return timer.disarm() }
        timer.arm(now().duration(to: next))
    }
}
