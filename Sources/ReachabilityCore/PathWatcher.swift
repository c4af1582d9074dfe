/// The event algorithm, written once for every loop that runs it: the library's
/// monitor thread (`MonitorLoop`) and reachd's sd-event loop. It owns no loop:
/// the owner calls `readable()` when the engine's socket is, and `timerFired()`
/// when the one timer it was asked to arm expires.
///
/// What it decides: read every queued event; evaluate the path only when an event
/// could change it; look again after an IPv4 route removal, or a look that found routes being
/// flushed (`PathEngine.recheckDelays`);
/// after a failed re-read of the state, retry every second with the path `unknown`;
/// hand over the interfaces that changed. Whether a path is news is `Path.succeeding(_:)`.
package final class PathWatcher {
    /// How the owner's loop arms and disarms the watcher's timer.
    package struct Timer {
        package var arm: (Duration) -> Void
        package var disarm: () -> Void

        package init(arm: @escaping (Duration) -> Void, disarm: @escaping () -> Void) {
            self.arm = arm
            self.disarm = disarm
        }
    }

    package private(set) var engine: PathEngine
    private let timer: Timer
    /// The path the owner watches, from the engine (the default path, or one host's).
    private let evaluate: (PathEngine) -> Path
    /// Given every evaluated path; the owner decides, with `Path.succeeding(_:)`, whether it is news.
    private let offer: (Path) -> Void
    /// Given the interfaces that changed, while `engine.tracksInterfaces`.
    private let interfacesChanged: ([InterfaceChange]) -> Void
    private let log: (String) -> Void
    private var rechecks: [ContinuousClock.Instant] = []

    package init(
        engine: PathEngine, timer: Timer, evaluate: @escaping (PathEngine) -> Path, offer: @escaping (Path) -> Void,
        interfacesChanged: @escaping ([InterfaceChange]) -> Void = { _ in }, log: @escaping (String) -> Void = { _ in }
    ) {
        self.engine = engine
        self.timer = timer
        self.evaluate = evaluate
        self.offer = offer
        self.interfacesChanged = interfacesChanged
        self.log = log
    }

    /// The engine's socket is readable.
    package func readable() {
        let outcome = engine.processEvents()
        if outcome.recheck { lookAgainSoon() }
        let wasSynchronized = engine.isSynchronized
        resynchronizeIfNeeded()
        // The path first: it is what most subscribers wait for.
        if outcome.evaluate || !wasSynchronized { evaluateNow() }
        if outcome.interfacesChanged || !wasSynchronized { handOverInterfaceChanges() }
    }

    /// The timer the watcher armed expired.
    package func timerFired() {
        engine.lookAgain()
        let wasSynchronized = engine.isSynchronized
        resynchronizeIfNeeded()
        evaluateNow()
        if !wasSynchronized { handOverInterfaceChanges() }
        armTimer()
    }

    /// Evaluates the watched path and offers it. A NAT64 prefix a router announced is
    /// looked at again when its lifetime ends, whether or not the kernel says anything.
    package func evaluateNow() {
        offer(evaluate(engine))
        if engine.sawRoutesBeingFlushed { lookAgainSoon() }
        if let expiry = engine.nextNAT64Expiry(), !rechecks.contains(expiry) {
            rechecks.append(expiry)
            rechecks.sort()
            armTimer()
        }
    }

    /// The network may have changed while nothing was read (the host slept): reads the
    /// kernel's state afresh, then evaluates and hands over what changed, as after an overrun.
    package func rereadState() {
        do {
            try engine.resynchronize()
        } catch {
            retryLater(error)
        }
        evaluateNow()
        handOverInterfaceChanges()
    }

    /// Watches another engine (a reload with other options); the owner evaluates when it is ready.
    package func replace(_ fresh: PathEngine) {
        fresh.tracksInterfaces = engine.tracksInterfaces
        engine = fresh
        rechecks = []
        armTimer()
    }

    private func handOverInterfaceChanges() {
        guard engine.tracksInterfaces else { return }
        let changes = engine.takeInterfaceChanges()
        if !changes.isEmpty { interfacesChanged(changes) }
    }

    /// After an overrun the state is re-dumped; a dump that fails is retried every
    /// second (the path is `unknown` meanwhile).
    private func resynchronizeIfNeeded() {
        guard !engine.isSynchronized else { return }
        do {
            try engine.resynchronize()
        } catch {
            retryLater(error)
        }
    }

    private func retryLater(_ error: any Error) {
        log("netlink: re-reading the state failed (\(error)); retrying in 1 s")
        rechecks.append(engine.clock.now() + .seconds(1))
        rechecks.sort()
        armTimer()
    }

    /// Evaluates again after each of `PathEngine.recheckDelays` from now.
    private func lookAgainSoon() {
        let now = engine.clock.now()
        rechecks = PathEngine.recheckDelays.map { now + $0 }
        armTimer()
    }

    private func armTimer() {
        let now = engine.clock.now()
        rechecks.removeAll { $0 <= now }
        guard let next = rechecks.first else { return timer.disarm() }
        timer.arm(now.duration(to: next))
    }
}

extension Path {
    /// `self` as the successor of `current`, the path subscribers hold: nil when it
    /// says nothing new (publishing it would be noise), else `self` with `since` kept
    /// while the status stays and `initial` cleared.
    package func succeeding(_ current: Path?) -> Path? {
        var path = self
        path.initial = false
        if let current {
            if current.isSamePath(as: path) { return nil }
            if current.status == path.status { path.since = current.since }
        }
        return path
    }
}
