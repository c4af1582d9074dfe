import DaemonDecisions
import Testing

/// The trust schedule without a loop: a fake helper that records what was
/// started, and timers that record how they were armed.
@Suite("trust schedule")
struct TrustSchedulerTests {
    final class Harness {
        var started: [(TrustScheduler.Job, String)] = []
        var roundTimer: [Duration?] = []
        var deliveryTimer: [Duration?] = []
        var spacingTimer: [Duration?] = []
        var awaitingProbe = false
        var helperStarts = true
        var mayDeliver = true
        var now = ContinuousClock.now
        var scheduler: TrustScheduler!

        /// `spacing`: between round starts (none unless a test is about it).
        init(enabled: Bool = true, recheck: TrustScheduler.Recheck = .onChange, spacing: Duration = .zero) {
            scheduler = TrustScheduler(
                isEnabled: enabled, canDeliver: true, recheck: recheck, interval: .seconds(60),
                roundTimer: .init(arm: { [unowned self] in roundTimer.append($0) }, disarm: { [unowned self] in roundTimer.append(nil) }),
                deliveryTimer: .init(
                    arm: { [unowned self] in deliveryTimer.append($0) }, disarm: { [unowned self] in deliveryTimer.append(nil) }),
                spacingTimer: .init(
                    arm: { [unowned self] in spacingTimer.append($0) }, disarm: { [unowned self] in spacingTimer.append(nil) }),
                minimumSpacing: spacing, now: { [unowned self] in now },
                isAwaitingProbe: { [unowned self] in awaitingProbe },
                mayDeliver: { [unowned self] in mayDeliver },
                start: { [unowned self] job, reason in
                    started.append((job, reason))
                    return helperStarts
                })
        }

        var reasons: [String] { started.map(\.1) }
    }

    @Test("the first path starts a round whatever recheck says; later ones follow it")
    func firstPath() {
        let harness = Harness(recheck: .interval)
        harness.scheduler.pathChanged(first: true)
        #expect(harness.reasons == ["start"])
        #expect(harness.scheduler.finished(.round(generation: 1)))
        #expect(harness.roundTimer == [.seconds(60)], "interval: the next round an interval later")
        harness.scheduler.pathChanged(first: false)
        #expect(harness.reasons == ["start"], "interval only: a path change runs no round, and no delivery with none waiting")
    }

    @Test("one helper at a time: a round asked for while one runs follows it, once")
    func oneAtATime() {
        let harness = Harness()
        harness.scheduler.requestRound("path change")
        harness.scheduler.requestRound("path change")
        harness.scheduler.requestRound("RecheckTrust")
        #expect(harness.started.count == 1)
        let job = harness.started[0].0
        #expect(harness.scheduler.finished(job))
        #expect(harness.roundTimer.isEmpty, "on-change: no interval round")
        harness.scheduler.runNext(after: job)
        #expect(harness.reasons == ["path change", "changed while checking"])
        harness.scheduler.runNext(after: job)
        #expect(harness.started.count == 2)
    }

    @Test("a round waits for the first connectivity verdict of a new way out")
    func waitsForProbe() {
        let harness = Harness()
        harness.awaitingProbe = true
        harness.scheduler.requestRound("path change")
        #expect(harness.started.isEmpty)
        harness.scheduler.connectivityPublished(portalChanged: false, connectivity: "unknown")
        #expect(harness.started.isEmpty, "still waiting")
        harness.awaitingProbe = false
        harness.scheduler.connectivityPublished(portalChanged: true, connectivity: "portal")
        #expect(harness.reasons == ["path change"], "the round that waited, not a second one")
        _ = harness.scheduler.finished(harness.started[0].0)
        harness.scheduler.connectivityPublished(portalChanged: true, connectivity: "full")
        #expect(harness.reasons == ["path change", "connectivity full"])
    }

    @Test("other evidence of a standing portal judges trust again; the same evidence does not")
    func portalEvidenceChanged() {
        let harness = Harness()
        harness.scheduler.connectivityPublished(portalChanged: false, evidenceChanged: false, connectivity: "portal")
        #expect(harness.started.isEmpty)
        harness.scheduler.connectivityPublished(portalChanged: false, evidenceChanged: true, connectivity: "portal")
        #expect(harness.reasons == ["captive-portal evidence"])
    }

    @Test("a round of an earlier config is stale")
    func staleAfterReload() {
        let harness = Harness()
        harness.scheduler.requestRound("start")
        harness.scheduler.reconfigure(isEnabled: true, canDeliver: true, recheck: .both, interval: .seconds(30), connectivityChanged: false)
        #expect(!harness.scheduler.finished(harness.started[0].0))
        #expect(harness.roundTimer == [nil, .seconds(30)])
        harness.scheduler.requestRound("reload")
        #expect(harness.scheduler.finished(harness.started[1].0))
    }

    @Test("waiting reports: retried 15 s after a new one, doubling to an hour, never beside a round")
    func deliveryBackoff() {
        let harness = Harness()
        harness.scheduler.reportsPending(1)
        harness.scheduler.reportsPending(1)
        harness.scheduler.reportsPending(1)
        #expect(harness.deliveryTimer == [.seconds(15), .seconds(30), .seconds(60)])
        harness.scheduler.reportsPending(2)
        #expect(harness.deliveryTimer.last == .seconds(15), "a new report: soon again")
        for _ in 0..<12 { harness.scheduler.reportsPending(2) }
        #expect(harness.deliveryTimer.last == .seconds(3600))
        harness.scheduler.requestRound("path change")
        harness.scheduler.requestDelivery("retry")
        #expect(harness.reasons == ["path change"], "the helper is busy: the round delivers too")
        _ = harness.scheduler.finished(harness.started[0].0)
        harness.scheduler.requestDelivery("retry")
        #expect(harness.started.last?.0 == .delivery)
        harness.scheduler.requestRound("path change")
        harness.scheduler.finished(.delivery)
        harness.scheduler.runNext(after: .delivery)
        #expect(harness.reasons.last == "changed while delivering")
        harness.scheduler.reportsPending(0)
        #expect(harness.deliveryTimer.last == .some(nil), "none waiting: no retry")
    }

    @Test(
        "a round that held its reports back (an intercepted host, a portal) is followed by a delivery pass at once; a round asked for meanwhile goes first"
    )
    func deliveryAfterHeldBackRound() {
        let harness = Harness()
        harness.scheduler.requestRound("start")
        harness.scheduler.reportsPending(1)
        _ = harness.scheduler.finished(harness.started[0].0)
        harness.scheduler.runNext(after: harness.started[0].0, reportsHeldBack: true)
        #expect(harness.reasons == ["start", "after a round that could not deliver"])
        harness.scheduler.finished(.delivery)
        harness.scheduler.requestRound("path change")
        harness.scheduler.requestRound("RecheckTrust")
        _ = harness.scheduler.finished(harness.started[2].0)
        harness.scheduler.runNext(after: harness.started[2].0, reportsHeldBack: true)
        #expect(harness.reasons.suffix(2) == ["path change", "changed while checking"], "the waiting round, not a delivery beside it")
        harness.mayDeliver = false
        _ = harness.scheduler.finished(harness.started[3].0)
        harness.scheduler.runNext(after: harness.started[3].0, reportsHeldBack: true)
        #expect(harness.started.count == 4, "no way out: nothing to deliver over")
    }

    @Test("without hosts no round runs; a helper that cannot start is not running")
    func disabledAndFailures() {
        let disabled = Harness(enabled: false)
        disabled.scheduler.pathChanged(first: true)
        disabled.scheduler.requestRound("RecheckTrust")
        #expect(disabled.started.isEmpty)
        let failing = Harness()
        failing.helperStarts = false
        failing.scheduler.requestRound("start")
        #expect(failing.scheduler.running == nil)
        failing.helperStarts = true
        failing.scheduler.requestRound("start")
        #expect(failing.scheduler.running != nil)
    }

    @Test("rounds start at least the spacing apart, whatever asks: one asked for sooner runs when it has passed, once")
    func spacing() {
        let harness = Harness(spacing: .seconds(5))
        harness.scheduler.requestRound("path change")
        #expect(harness.scheduler.finished(harness.started[0].0))
        harness.now += .seconds(1)
        harness.scheduler.requestRound("path change")
        harness.scheduler.requestRound("RecheckTrust")
        #expect(harness.started.count == 1)
        #expect(harness.spacingTimer == [.seconds(4)])
        harness.now += .seconds(4)
        harness.scheduler.spacingElapsed()
        #expect(harness.reasons == ["path change", "RecheckTrust"])
        harness.scheduler.spacingElapsed()
        #expect(harness.started.count == 2, "once")
    }

    @Test("waiting reports go only while the owner says they may (the path full, trust neither compromised nor portal)")
    func deliveryHeldBack() {
        let harness = Harness()
        harness.scheduler.reportsPending(1)
        harness.mayDeliver = false
        harness.scheduler.requestDelivery("retry")
        #expect(harness.started.isEmpty)
        harness.mayDeliver = true
        harness.scheduler.requestDelivery("connectivity full")
        #expect(harness.reasons == ["connectivity full"])
    }
}

@Suite("one request per user per interval")
struct PerUserRateLimitTests {
    @Test("each user has a budget of their own; root always; unknown callers share one")
    func perUser() {
        var limit = PerUserRateLimit(interval: .seconds(10))
        let start = ContinuousClock.now
        let first = limit.admit(1000, now: start)
        let again = limit.admit(1000, now: start + .seconds(9))
        let other = limit.admit(1001, now: start + .seconds(9))
        #expect(first && !again, "the same user within the interval")
        #expect(other, "another user is not held back by the first")
        let root = (limit.admit(0, now: start + .seconds(9)), limit.admit(0, now: start + .seconds(9)))
        #expect(root == (true, true), "root, always")
        let unknown = (limit.admit(nil, now: start), limit.admit(nil, now: start + .seconds(1)))
        #expect(unknown == (true, false), "unknown callers share one budget")
        let later = limit.admit(1000, now: start + .seconds(10))
        #expect(later, "after the interval")
    }
}
