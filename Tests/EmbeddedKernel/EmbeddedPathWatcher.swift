import Netlink
import ReachabilityCore

/// `PathWatcher` on an `EmbeddedKernel`, driven the way a loop drives it — read
/// while the socket is readable, fire the one timer when it expires — but by the
/// test, on the test's thread, on the kernel's virtual clock. Every path the watcher
/// offers is kept, with what was still queued when it was offered.
package final class EmbeddedPathWatcher {
    package let kernel: EmbeddedKernel
    package let engine: PathEngine
    private let events: EmbeddedKernelSubscription
    private var watcher: PathWatcher!
    private var deadline: ContinuousClock.Instant?

    /// A path the watcher offered, and the datagrams not yet read at that moment.
    package struct Offer {
        package var path: Path
        package var queued: Int
    }

    package private(set) var offers: [Offer] = []
    /// What subscribers were told: the offers that were news (`Path.succeeding`).
    package private(set) var published: [Path] = []
    package private(set) var interfaceChanges: [[InterfaceChange]] = []
    package private(set) var log: [String] = []

    package init(
        kernel: EmbeddedKernel, options: MonitorOptions = MonitorOptions(), facts: any InterfaceFactsSource = NoInterfaceFacts(),
        tracksInterfaces: Bool = false
    ) throws {
        self.kernel = kernel
        let events = try kernel.subscribe()
        self.events = events
        engine = try PathEngine(options: options, events: events, queries: kernel, facts: facts, clock: kernel.clock.loopClock)
        engine.tracksInterfaces = tracksInterfaces
        let clock = kernel.clock
        watcher = PathWatcher(
            engine: engine,
            timer: PathWatcher.Timer(arm: { [unowned self] in deadline = clock.now + $0 }, disarm: { [unowned self] in deadline = nil }),
            evaluate: { $0.evaluateDefaultPath() },
            offer: { [unowned self] path in
                offers.append(Offer(path: path, queued: events.queued))
                if let news = path.succeeding(published.last) { published.append(news) }
            },
            interfacesChanged: { [unowned self] in interfaceChanges.append($0) },
            log: { [unowned self] in log.append($0) })
        watcher.evaluateNow()
    }

    /// The path subscribers hold.
    package var path: Path? { published.last }

    /// When the watcher's timer will fire, if armed.
    package var timerDeadline: ContinuousClock.Instant? { deadline }

    /// Reads until nothing is queued, as a loop does while the socket stays readable.
    package func read() {
        while events.queued > 0 { watcher.readable() }
    }

    /// Moves the clock on by `duration`, firing the timer each time it expires on the way.
    package func advance(by duration: Duration) {
        let end = kernel.clock.now + duration
        while let due = deadline, due <= end {
            kernel.clock.advance(to: due)
            deadline = nil
            watcher.timerFired()
        }
        kernel.clock.advance(to: end)
    }

    /// The host slept and woke: the state is read afresh.
    package func resumed() {
        watcher.rereadState()
    }
}
