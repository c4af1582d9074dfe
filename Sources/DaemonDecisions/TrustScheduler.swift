/// When reachd runs reachd-trust: trust rounds and deliveries of waiting
/// pin-failure reports. Loop-free, like `ConnectivityScheduler`: the owner
/// supplies two timers and a way to start the helper, and calls back on its
/// own thread, the only one that touches the scheduler.
///
/// The rules:
/// - one helper at a time (a round and a delivery both send reports); a round
///   asked for while one runs follows it, once;
/// - a round asked for while the first connectivity probe of a new way out is
///   out waits for its verdict, so that a captive portal's interception is not
///   judged an attack;
/// - the first path starts a round whatever `recheck` says; after it, path
///   changes do unless only the interval should (then they retry deliveries);
///   with `interval` or `both`, the next round follows each one by `interval`;
/// - rounds start at least `minimumSpacing` apart, whatever asks for them (router
///   advertisements flapping the path, `RecheckTrust` callers): one asked for
///   sooner runs when the spacing has passed, once;
/// - waiting reports are retried 15 s after a new one arrives, doubling to an
///   hour while they keep waiting, on path changes, and at once after a round
///   that wrote reports it could not send — while the owner says a pass may run
///   (there is a way out; each collector's validation, and `ReportRoute` for
///   plain-HTTP ones, decide what goes: docs/security.md).
package final class TrustScheduler {
    /// What runs in reachd-trust.
    package enum Job: Equatable, Sendable {
        case round(generation: Int)
        case delivery
    }

    /// What `[trust] recheck` says.
    package enum Recheck: String, Sendable {
        case onChange = "on-change", interval, both
    }

    /// A one-shot timer of the owner's loop.
    package struct Timer {
        let arm: (Duration) -> Void
        let disarm: () -> Void

        package init(arm: @escaping (Duration) -> Void, disarm: @escaping () -> Void) {
            self.arm = arm
            self.disarm = disarm
        }
    }

    package static let firstDeliveryRetry = Duration.seconds(15)
    /// Between the starts of two rounds.
    package static let minimumSpacing = Duration.seconds(2)
    package static let lastDeliveryRetry = Duration.seconds(3600)

    /// Hosts are configured and the helper is there.
    package private(set) var isEnabled: Bool
    /// The helper is there: reports spooled under an earlier config are delivered
    /// even when this one has no hosts.
    package private(set) var canDeliver: Bool
    package private(set) var recheck: Recheck
    package private(set) var interval: Duration
    /// Reports spooled and not delivered yet, as the helper last said.
    package private(set) var reportsPending = 0
    /// Rounds started since the config was loaded; a result of an earlier one is stale.
    package private(set) var generation = 0
    package private(set) var running: Job?

    private var roundAgain = false
    /// A round asked for before the spacing passed, and why.
    private var spaced: String?
    private var lastRoundStart: ContinuousClock.Instant?
    private let minimumSpacing: Duration
    private let spacingTimer: Timer
    private let now: () -> ContinuousClock.Instant
    private let mayDeliver: () -> Bool
    /// A round waiting for the first connectivity verdict, and why it was asked for.
    private var afterProbe: String?
    private var deliveryBackoff = TrustScheduler.firstDeliveryRetry
    private let roundTimer: Timer
    private let deliveryTimer: Timer
    private let start: (Job, _ reason: String) -> Bool
    private let isAwaitingProbe: () -> Bool

    /// - Parameters:
    ///   - start: starts reachd-trust for the job; false when it could not (the
    ///     owner says why). The owner calls `finished(_:)` when the job ends.
    ///   - isAwaitingProbe: whether the first connectivity probe of the way out is still out.
    ///   - mayDeliver: whether waiting reports may be sent now.
    ///   - spacingTimer: fires when a round held back by `minimumSpacing` may start (`spacingElapsed()`).
    package init(
        isEnabled: Bool, canDeliver: Bool, recheck: Recheck, interval: Duration, roundTimer: Timer, deliveryTimer: Timer,
        spacingTimer: Timer, minimumSpacing: Duration = TrustScheduler.minimumSpacing,
        now: @escaping () -> ContinuousClock.Instant = { .now },
        isAwaitingProbe: @escaping () -> Bool, mayDeliver: @escaping () -> Bool,
        start: @escaping (Job, _ reason: String) -> Bool
    ) {
        self.spacingTimer = spacingTimer
        self.minimumSpacing = minimumSpacing
        self.now = now
        self.mayDeliver = mayDeliver
        self.isEnabled = isEnabled
        self.canDeliver = canDeliver
        self.recheck = recheck
        self.interval = interval
        self.roundTimer = roundTimer
        self.deliveryTimer = deliveryTimer
        self.isAwaitingProbe = isAwaitingProbe
        self.start = start
    }

    /// Runs a round now, or as soon as it may.
    package func requestRound(_ reason: String) {
        guard isEnabled else { return }
        if isAwaitingProbe() {
            afterProbe = reason
            return
        }
        if running != nil {
            roundAgain = true
            return
        }
        if let last = lastRoundStart, last.duration(to: now()) < minimumSpacing {
            if spaced == nil { spacingTimer.arm(minimumSpacing - last.duration(to: now())) }
            spaced = reason
            return
        }
        afterProbe = nil
        spaced = nil
        generation += 1
        lastRoundStart = now()
        if start(.round(generation: generation), reason) { running = .round(generation: generation) }
    }

    /// The spacing after the last round passed: the round held back runs.
    package func spacingElapsed() {
        guard let reason = spaced else { return }
        spaced = nil
        requestRound(reason)
    }

    /// A new path was published (`first`: the daemon's first).
    package func pathChanged(first: Bool) {
        if first {
            requestRound("start")
        } else if recheck != .interval {
            requestRound("path change")
        } else {
            requestDelivery("path change")
        }
    }

    /// Connectivity was published after a verdict or a round: a round that waited
    /// for the probe runs now; entering or leaving a portal judges trust again, and
    /// so does other evidence of the portal while it stands (`evidenceChanged`: the
    /// network's API now announces it, or contradicts the probe's redirect).
    package func connectivityPublished(portalChanged: Bool, evidenceChanged: Bool = false, connectivity: String) {
        if let reason = afterProbe, !isAwaitingProbe() {
            afterProbe = nil
            requestRound(reason)
        } else if portalChanged {
            requestRound("connectivity \(connectivity)")
        } else if evidenceChanged {
            requestRound("captive-portal evidence")
        }
    }

    /// Sends the waiting reports, unless the helper is busy (a round sends them too).
    package func requestDelivery(_ reason: String) {
        guard reportsPending > 0, canDeliver, running == nil, mayDeliver() else { return }
        if start(.delivery, reason) { running = .delivery }
    }

    /// The job ended, whatever its outcome: the helper is free. Returns whether a
    /// round's result is current: false for one started before the config was reloaded.
    /// Call `runNext(after:reportsHeldBack:)` once the outcome is applied.
    @discardableResult
    package func finished(_ job: Job) -> Bool {
        running = nil
        guard case let .round(number) = job else { return true }
        if recheck != .onChange { roundTimer.arm(interval) }
        return number == generation
    }

    /// Starts the round asked for while `job` ran, if one was; else, after a round
    /// that wrote reports it could not send (`reportsHeldBack`: its verdict or the path
    /// kept it from delivering, docs/security.md), a delivery pass at once — it tries
    /// the collectors whose own validation may let them take the reports.
    package func runNext(after job: Job, reportsHeldBack: Bool = false) {
        if roundAgain {
            roundAgain = false
            requestRound(job == .delivery ? "changed while delivering" : "changed while checking")
        }
        if reportsHeldBack { requestDelivery("after a round that could not deliver") }
    }

    /// The helper counted the waiting reports: re-arms the retry, sooner when a new
    /// one arrived, later after each attempt that left reports waiting.
    package func reportsPending(_ count: Int) {
        if count > reportsPending { deliveryBackoff = Self.firstDeliveryRetry }
        reportsPending = count
        guard count > 0, canDeliver else {
            deliveryBackoff = Self.firstDeliveryRetry
            return deliveryTimer.disarm()
        }
        deliveryTimer.arm(deliveryBackoff)
        deliveryBackoff = min(deliveryBackoff * 2, Self.lastDeliveryRetry)
    }

    /// A reloaded config: results of rounds started before are stale, the interval
    /// timer waits for the next round, and a probe-deferred round is forgotten when
    /// the connectivity options changed (the owner asks for a round after).
    package func reconfigure(isEnabled: Bool, canDeliver: Bool, recheck: Recheck, interval: Duration, connectivityChanged: Bool) {
        self.isEnabled = isEnabled
        self.canDeliver = canDeliver
        self.recheck = recheck
        self.interval = interval
        if connectivityChanged { afterProbe = nil }
        generation += 1
        roundTimer.disarm()
    }
}
