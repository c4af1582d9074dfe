import DaemonDecisions
import FoundationEssentials
import ReachabilityBus
import ReachabilityCore
import SDBus
import TrustHelperMessages

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's side of trust (docs/security.md): runs reachd-trust's rounds and
/// report deliveries when `TrustScheduler` says, keeps the verdict they gave, and
/// announces it (TrustChanged, PinFailure, the log). Lives on the loop thread; the
/// path document that carries the verdict is republished by the daemon (`finished`).
final class TrustCoordinator {
    /// What a round needs from the rest of the daemon.
    struct Hooks {
        /// The published path and the probe's latest answer: the round's evidence.
        var path: () -> (path: Path?, probe: ConnectivityProbe.Verdict?)
        /// A round waits for the first probe verdict and the API's first answer.
        var isAwaitingEvidence: () -> Bool
        /// Reports go out only over a path that reaches the Internet unaltered.
        var mayDeliver: () -> Bool
        /// A round ended (its verdict is applied): the document is republished.
        var finished: () -> Void
        var metricsChanged: () -> Void
    }

    private let configFile: String
    private var options: TrustConfigurationSummary
    private let helper: TrustHelper?
    private let runs: HelperRuns
    private let object: ReachabilityObject
    private let metrics: DaemonMetrics
    private let hooks: Hooks
    private let log: Log
    /// When rounds and report deliveries run.
    private(set) var schedule: TrustScheduler!
    /// The latest round's result (nil: none since start or reload, or the last one gave none).
    private(set) var round: TrustRound?
    /// Without a probe, the evidence of `full` (docs/connectivity.md): a host's chain validated in the latest round.
    private(set) var validated = false
    /// Warnings about the config (a pin set with no backup key) come with every round; the log says each once per config loaded.
    private var loggedWarnings: Set<String> = []
    /// Any user may ask; each user at most once per 10 s, root always (docs/security.md).
    private var recheckLimit = PerUserRateLimit(interval: .seconds(10))

    init(
        configFile: String, options: TrustConfigurationSummary, helper: TrustHelper?, runs: HelperRuns, loop: EventLoop,
        object: ReachabilityObject, metrics: DaemonMetrics, log: Log, hooks: Hooks
    ) throws {
        (self.configFile, self.options, self.helper, self.runs, self.object, self.metrics, self.log, self.hooks) =
            (configFile, options, helper, runs, object, metrics, log, hooks)
        let roundTimer = try loop.timer { [unowned self] in schedule.requestRound("interval") }
        let deliveryTimer = try loop.timer { [unowned self] in schedule.requestDelivery("retry") }
        let spacingTimer = try loop.timer { [unowned self] in schedule.spacingElapsed() }
        schedule = TrustScheduler(
            isEnabled: Self.checksTrust(options, helper), canDeliver: helper != nil,
            recheck: Self.recheckPolicy(options), interval: .seconds(options.interval),
            roundTimer: .init(arm: { roundTimer.arm(after: $0) }, disarm: { roundTimer.disarm() }),
            deliveryTimer: .init(arm: { deliveryTimer.arm(after: $0) }, disarm: { deliveryTimer.disarm() }),
            spacingTimer: .init(arm: { spacingTimer.arm(after: $0) }, disarm: { spacingTimer.disarm() }),
            isAwaitingProbe: hooks.isAwaitingEvidence, mayDeliver: hooks.mayDeliver,
            start: { [unowned self] job, reason in start(job, reason: reason) })
        updateReportsPending(options.reportsPending)
    }

    /// Whether trust is checked at all: hosts configured and the helper there.
    private static func checksTrust(_ options: TrustConfigurationSummary, _ helper: TrustHelper?) -> Bool {
        options.hosts > 0 && helper != nil
    }

    private static func recheckPolicy(_ options: TrustConfigurationSummary) -> TrustScheduler.Recheck {
        TrustScheduler.Recheck(rawValue: options.recheck) ?? .onChange
    }

    /// The overall verdict the document and TrustChanged carry.
    var summary: TrustSummary {
        guard schedule.isEnabled else { return .none }
        return round?.overall ?? .unknown
    }

    /// The TrustStatus document (docs/api.md).
    func status() -> String {
        (try? TrustStatus(overall: summary, hosts: round?.hosts ?? [], reportsPending: schedule.reportsPending).json()) ?? "{}"
    }

    /// RecheckTrust().
    func recheck(caller: uid_t?) throws(BusMethodError) {
        guard schedule.isEnabled else { throw .failed("no trust hosts are configured") }
        guard recheckLimit.admit(caller) else { throw .limitsExceeded("RecheckTrust is rate-limited to once per 10 s for each user") }
        schedule.requestRound("RecheckTrust")
    }

    /// A reload: the checked `[trust]` table is in force; what the old one judged is forgotten.
    func reconfigure(_ fresh: TrustConfigurationSummary, connectivityChanged: Bool) {
        options = fresh
        schedule.reconfigure(
            isEnabled: Self.checksTrust(fresh, helper), canDeliver: helper != nil, recheck: Self.recheckPolicy(fresh),
            interval: .seconds(fresh.interval), connectivityChanged: connectivityChanged)
        round = nil
        validated = false
        loggedWarnings = []
        updateReportsPending(fresh.reportsPending)
    }

    /// Starts reachd-trust for what the scheduler asks; false when it could not start.
    private func start(_ job: TrustScheduler.Job, reason: String) -> Bool {
        guard let helper else { return false }
        do {
            switch job {
            case .round:
                log.debug("trust: checking \(options.hosts) hosts (\(reason))")
                let (path, probe) = hooks.path()
                try helper.startCheck(
                    configFile, path: path, probe: probe, within: options.roundBudget(reportsPending: schedule.reportsPending),
                    runs: runs
                ) { [unowned self] result in finishRound(job, result) }
            case .delivery:
                log.debug("trust: delivering \(schedule.reportsPending) waiting reports (\(reason))")
                try helper.startDelivery(
                    configFile, route: (hooks.path().path?.connectivity ?? .none, summary),
                    within: options.deliveryBudget(reports: schedule.reportsPending), runs: runs
                ) {
                    [unowned self] result in finishDelivery(result)
                }
            }
            return true
        } catch {
            log.error("trust: \(error)")
            return false
        }
    }

    private func finishRound(_ job: TrustScheduler.Job, _ result: Result<TrustRound, TrustHelper.Failure>) {
        var heldBack = false
        // A round started before a reload is stale.
        if schedule.finished(job) {
            switch result {
            case let .success(round):
                validated = round.hosts.contains { $0.verdict.isValidated }
                apply(round)
                // The helper sends what waits only over an unaltered path (ReportRoute): else a pass
                // follows for the new reports (those that waited before keep their retry's backoff).
                heldBack =
                    !round.reports.isEmpty
                    && !ReportRoute(connectivity: hooks.path().path?.connectivity.rawValue, trust: round.overall).allowsPlainHTTP
            case let .failure(failure) where failure.timedOut:
                validated = false
                abandonRound(failure)
            case let .failure(failure):
                validated = false
                forget(failure)
            }
            hooks.finished()
        }
        schedule.runNext(after: job, reportsHeldBack: heldBack)
    }

    private func finishDelivery(_ result: Result<TrustDelivery, TrustHelper.Failure>) {
        schedule.finished(.delivery)
        switch result {
        case let .success(delivery):
            if delivery.delivered > 0 { log.notice("trust: \(delivery.delivered) waiting reports delivered") }
            // A collector that did not answer is retried; a report lost or unaccounted for is not.
            for warning in delivery.warnings {
                if delivery.reportFailures > 0 { log.warning("trust: \(warning)") } else { log.info("trust: \(warning)") }
            }
            metrics.reportFailures += delivery.reportFailures
            updateReportsPending(delivery.reportsPending)
        case let .failure(failure):
            log.error("trust: \(failure)")
            updateReportsPending(schedule.reportsPending)
        }
        schedule.runNext(after: .delivery)
    }

    private func updateReportsPending(_ count: Int) {
        schedule.reportsPending(count)
        hooks.metricsChanged()
    }

    private func apply(_ fresh: TrustRound) {
        let before = summary
        round = fresh
        metrics.count(fresh)
        for warning in fresh.warnings where loggedWarnings.insert(warning).inserted { log.warning("trust: \(warning)") }
        for name in fresh.evicted { log.warning("trust: report \(name) evicted to keep the spool within its capacity") }
        // Reports are on disk (reachd-trust spools them before it answers): now they may be signalled.
        for report in fresh.reports {
            object.emit(.pinFailure, report)
            log.warning(Self.logLine(ofReport: report))
        }
        updateReportsPending(fresh.reportsPending)
        guard summary != before || !fresh.reports.isEmpty else { return }
        announce()
    }

    /// "trust: pin failure for HOST[ behind …]: RESULT (report spooled)".
    private static func logLine(ofReport report: String) -> String {
        let head = try? JSONDecoder().decode(PinFailureReportHead.self, from: Data(report.utf8))
        let portal =
            head?.captivePortal.map { portal in
                let probe =
                    "the probe got \(portal.httpStatus.map(String.init) ?? "no HTTP answer")\(portal.location.map { " to \($0)" } ?? "")"
                return switch portal.kind {
                case .announced: " behind a captive portal announced by \(portal.api ?? "the network")"
                case .contradicted: " where \(probe), yet \(portal.api ?? "the network's API") says the network is not captive"
                case .redirect: " behind a captive portal (\(probe))"
                }
            } ?? ""
        return "trust: pin failure for \(head?.hostname ?? "?")\(portal): \(head?.validationResult.rawValue ?? "?") (report spooled)"
    }

    /// A round past its budget, killed: every host is `unknown` (not judged), with
    /// the reason, and the next round runs as any other. A helper stopped, or held
    /// by a server that trickles bytes, must not keep the last verdict standing.
    private func abandonRound(_ failure: TrustHelper.Failure) {
        log.error("trust: \(failure); every host is unknown until a round completes")
        metrics.roundsKilled += 1
        let checkedAt = Date()
        let hosts = options.probed.map {
            TrustStatus.Host(
                host: $0.host, port: $0.port, pattern: $0.host, verdict: .unknown, reason: "not judged: \(failure)",
                enforced: true, checkedAt: checkedAt)
        }
        let before = summary
        // Every host keeps its verdict series (now `unknown`): an absent series never means "fine".
        round = TrustRound(
            overall: .unknown, hosts: hosts, reports: [], warnings: [], reportsPending: schedule.reportsPending,
            evicted: [])
        if summary != before { announce() } else { object.publishTrust(summary.rawValue, document: status()) }
    }

    /// A round that gave no result (reachd-trust crashed, or the config on disk no
    /// longer reads): the last verdict is not kept as if it still held — an
    /// attacker able to crash the checker must not keep `ok` standing.
    private func forget(_ failure: TrustHelper.Failure) {
        log.error("trust: \(failure); the verdict is unknown until a round completes")
        guard round != nil else { return }
        round = nil
        announce()
    }

    /// The host woke up: the verdict, and what validated, may be another network's. Both
    /// are forgotten (`unknown`, never the old verdict) until the round this starts completes.
    func resumed() {
        validated = false
        if round != nil {
            round = nil
            announce()
        }
        schedule.requestRound("resumed from sleep")
    }

    /// The verdict changed: the log, TrustChanged and the metrics. The path
    /// document carries the verdict too: the daemon republishes it (`finished`).
    private func announce() {
        log.notice("trust: \(summary.rawValue)")
        object.publishTrust(summary.rawValue, document: status())
        hooks.metricsChanged()
    }
}
