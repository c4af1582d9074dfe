import CSystemd
import Dispatch
import FoundationEssentials
import Netlink
import ReachabilityBus
import ReachdMetrics
import TrustHelperMessages
import ReachabilityCore
#if canImport(Glibc)
import Glibc
#endif

/// The daemon: one event-loop thread owns the netlink engine and every bus
/// connection. Trust checks run in reachd-trust (its answer is read on the
/// loop); name resolution runs on another thread and posts back through the mailbox.
final class Daemon: ReachabilityObjectDelegate {
    enum Message: Sendable {
        case resolved(request: Int, addresses: [IPAddress])
        case probed(generation: Int, verdict: ConnectivityProbe.Verdict)
    }

    let configFile: String
    let loop: EventLoop
    let object = ReachabilityObject()
    let mailbox = Mailbox<Message>()

    private var configuration: DaemonConfiguration
    private var engine: PathEngine
    private var engineWatch: EventLoop.Watch?
    private var current: Path?
    private var isReady = false
    private var lastLoggedLine = ""

    private var rechecks: [ContinuousClock.Instant] = []
    private var recheckTimer: EventLoop.Timer!

    private let helper: TrustHelper?
    private var trustRound: TrustRound?
    private var trustGeneration = 0
    /// A round or a delivery runs in reachd-trust: one at a time (both send reports).
    private var helperRunning = false
    private var trustAgain = false
    private var lastRecheckRequest: ContinuousClock.Instant?
    private var trustTimer: EventLoop.Timer!
    /// Warnings about the config (a pin set with no backup key) come with every
    /// round; the log says each once per config loaded.
    private var loggedTrustWarnings: Set<String> = []

    /// Pin-failure reports waiting for their collectors, and when they are tried
    /// again: 15 s after a new one, doubling to an hour (and on every path change).
    private var reportsPending = 0
    private var deliveryTimer: EventLoop.Timer!
    private var deliveryBackoff = Daemon.firstDeliveryRetry
    static let firstDeliveryRetry = Duration.seconds(15)
    static let lastDeliveryRetry = Duration.seconds(3600)

    private var connectivity: ConnectivityChecker!
    /// Without a probe, CONTRACT.md's evidence of `full`: a host's chain validated in the latest round.
    private var trustValidated = false
    /// A round asked for while the first probe of a new way out is out: it waits for
    /// the verdict, so that a portal's interception is not judged an attack.
    private var trustAfterProbe: String?

    private var metrics = DaemonMetrics()
    private var metricsServer: MetricsServer?
    private var metricsTextfile: MetricsTextfile?

    private var pendingRoutes: [Int: (destination: String, caller: String, reply: (Result<String, BusMethodError>) -> Void)] = [:]
    private var nextRequest = 0

    init(configFile: String, configuration: DaemonConfiguration, helper: TrustHelper?, loop: EventLoop) throws {
        self.configFile = configFile
        self.configuration = configuration
        self.helper = helper
        self.loop = loop
        engine = try PathEngine(options: configuration.monitor)
        object.delegate = self
        recheckTimer = try loop.timer { [unowned self] in recheckDue() }
        trustTimer = try loop.timer { [unowned self] in startTrustCheck(reason: "interval") }
        deliveryTimer = try loop.timer { [unowned self] in startDelivery(reason: "retry") }
        let mailbox = mailbox
        connectivity = try ConnectivityChecker(options: configuration.connectivity, loop: loop) {
            mailbox.post(.probed(generation: $0, verdict: $1))
        }
        try loop.onReadable(mailbox.descriptor) { [unowned self] in
            for message in mailbox.take() { handle(message) }
        }
        try watchEngine()
        try startMetrics(configuration.metrics)
        updateReportsPending(configuration.trust.reportsPending)
    }

    private func watchEngine() throws {
        engineWatch = try loop.onReadable(engine.fileDescriptor) { [unowned self] in
            let overruns = engine.statistics.overruns
            let outcome = engine.processEvents()
            if outcome.recheck {
                let now = ContinuousClock.now
                rechecks = PathEngine.recheckDelays.map { now + $0 }
                armRecheck()
            }
            let wasSynchronized = engine.isSynchronized
            resynchronizeIfNeeded()
            if outcome.evaluate || !wasSynchronized { publishCurrentPath() }
            if engine.statistics.overruns != overruns { metricsChanged() }
        }
    }

    /// After an overrun the state is re-dumped; a dump that fails is retried
    /// every second (the path is `unknown` meanwhile).
    private func resynchronizeIfNeeded() {
        guard !engine.isSynchronized else { return }
        do {
            try engine.resynchronize()
        } catch {
            Log.warning("netlink: re-reading the state failed (\(error)); retrying in 1 s")
            rechecks.append(.now + .seconds(1))
            rechecks.sort()
            armRecheck()
        }
    }

    /// Whether trust is checked at all: hosts configured and the helper there.
    private var checksTrust: Bool { configuration.trust.hosts > 0 && helper != nil }

    // MARK: The path

    /// Evaluates the path and publishes it when it changed: properties,
    /// StatusChanged, STATUS=, and READY=1 the first time.
    func publishCurrentPath() {
        var path = engine.evaluateDefaultPath()
        path.source = .daemon
        path.trust = trustSummary
        path.initial = false
        connectivity.observe(path)
        guard publish(path) else { return }
        // The first path starts the first round whatever `recheck` says (with
        // "interval" alone there would be no verdict for an interval); after it,
        // path changes do unless only the interval should.
        if !isReady {
            startTrustCheck(reason: "start")
        } else if configuration.trust.recheck != "interval" {
            startTrustCheck(reason: "path change")
        } else {
            startDelivery(reason: "path change")
        }
        isReady = true
    }

    /// Publishes `fresh` with its connectivity when the document differs from the
    /// current one (a connectivity change is one StatusChanged, like any other).
    @discardableResult
    private func publish(_ fresh: Path) -> Bool {
        var path = fresh
        // Without a probe, CONTRACT.md's evidence of `full` is a host validated in the latest round.
        (path.connectivity, path.portal) = connectivity.schedule.state(of: path, unprobed: trustValidated ? .full : .unknown)
        if let current {
            if current.isSamePath(as: path) { return false }
            if current.status == path.status { path.since = current.since }
        }
        let before = current?.connectivity
        current = path
        object.update(properties(of: path))
        object.emit("StatusChanged", path.status.rawValue, path.jsonString())
        metrics.pathChanges += 1
        metricsChanged()
        let line = Self.describe(path)
        // Interface-list changes publish a document too; the log says when the status line moves.
        if line != lastLoggedLine { Log.info("path: \(line)") } else { Log.debug("path: \(line) (interfaces changed)") }
        lastLoggedLine = line
        if before != path.connectivity, path.status.isReachable {
            let details = connectivity.schedule.verdict.map { " (\($0.details.joined(separator: "; ")))" } ?? ""
            Log.info("connectivity: \(path.connectivity.rawValue)\(path.portal.map { " at \($0)" } ?? "")\(details)")
        }
        notify(isReady ? "STATUS=\(line)" : "READY=1\nSTATUS=\(line)")
        return true
    }

    /// Connectivity may have changed without the path (a probe answered, a round
    /// validated): publish it; leaving or entering a portal re-judges trust.
    private func refreshConnectivity() {
        guard let path = current else { return }
        let before = path.connectivity
        publish(path)
        let after = current?.connectivity ?? before
        if let reason = trustAfterProbe, !connectivity.schedule.isAwaitingFirstVerdict {
            trustAfterProbe = nil
            startTrustCheck(reason: reason)
        } else if (before == .portal) != (after == .portal) {
            startTrustCheck(reason: "connectivity \(after.rawValue)")
        }
    }

    private func properties(of path: Path) -> ReachabilityObject.Properties {
        var properties = ReachabilityObject.Properties()
        properties.status = path.status.rawValue
        properties.reason = path.reason?.rawValue ?? ""
        properties.interface = path.interface?.name ?? ""
        properties.interfaceKind = path.interface?.kind.rawValue ?? ""
        properties.expensive = path.expensive
        properties.ipv4 = path.ipv4
        properties.ipv6 = path.ipv6
        properties.vpn = path.vpn?.name ?? ""
        properties.trust = path.trust.rawValue
        properties.connectivity = path.connectivity.rawValue
        properties.portalURL = path.portal ?? ""
        return properties
    }

    static func describe(_ path: Path) -> String {
        var text = path.status.rawValue
        if let reason = path.reason { text += " (\(reason.rawValue))" }
        if let interface = path.interface { text += " dev \(interface.name)" }
        if let vpn = path.vpn { text += " vpn \(vpn.name)" }
        return text
    }

    private func armRecheck() {
        rechecks.removeAll { $0 <= .now }
        guard let next = rechecks.first else { return recheckTimer.disarm() }
        recheckTimer.arm(after: ContinuousClock.now.duration(to: next))
    }

    private func recheckDue() {
        resynchronizeIfNeeded()
        publishCurrentPath()
        armRecheck()
    }

    // MARK: Trust

    private var trustSummary: TrustSummary {
        guard checksTrust else { return .none }
        guard let trustRound else { return .unknown }
        return TrustSummary(rawValue: trustRound.overall) ?? .unknown
    }

    /// Runs a round in reachd-trust; a round asked for while one runs follows it.
    private func startTrustCheck(reason: String) {
        guard checksTrust, let helper else { return }
        if connectivity.schedule.isAwaitingFirstVerdict {
            trustAfterProbe = reason
            return
        }
        if helperRunning {
            trustAgain = true
            return
        }
        trustAfterProbe = nil
        let path = current.map { [$0.status.rawValue, $0.interface?.name ?? "", $0.connectivity.rawValue] } ?? []
        Log.debug("trust: checking \(configuration.trust.hosts) hosts (\(reason))")
        trustGeneration += 1
        let generation = trustGeneration
        do {
            try helper.startCheck(configFile, path: path, on: loop) { [unowned self] result in
                finishTrustCheck(result, generation: generation)
            }
            helperRunning = true
        } catch {
            Log.error("trust: \(error)")
        }
    }

    private func finishTrustCheck(_ result: Result<TrustRound, TrustHelper.Failure>, generation: Int) {
        helperRunning = false
        // A round started before a reload is stale.
        if generation == trustGeneration {
            switch result {
            case let .success(round):
                trustValidated = round.summaries.contains { TrustHostSummary.validatedVerdicts.contains($0.verdict) }
                publishTrust(round)
            case let .failure(failure):
                trustValidated = false
                forgetTrust(failure)
            }
            refreshConnectivity()
        }
        if configuration.trust.recheck != "on-change" { trustTimer.arm(after: .seconds(configuration.trust.interval)) }
        if trustAgain {
            trustAgain = false
            startTrustCheck(reason: "changed while checking")
        }
    }

    /// Sends the waiting reports (a round does it too, so none runs beside one).
    private func startDelivery(reason: String) {
        guard reportsPending > 0, let helper, !helperRunning else { return }
        Log.debug("trust: delivering \(reportsPending) waiting reports (\(reason))")
        do {
            try helper.startDelivery(configFile, on: loop) { [unowned self] result in
                helperRunning = false
                switch result {
                case let .success(delivery):
                    if delivery.delivered > 0 { Log.notice("trust: \(delivery.delivered) waiting reports delivered") }
                    for warning in delivery.warnings { Log.info("trust: \(warning)") }
                    updateReportsPending(delivery.reportsPending)
                case let .failure(failure):
                    Log.error("trust: \(failure)")
                    updateReportsPending(reportsPending)
                }
                if trustAgain {
                    trustAgain = false
                    startTrustCheck(reason: "changed while delivering")
                }
            }
            helperRunning = true
        } catch {
            Log.error("trust: \(error)")
        }
    }

    /// Re-arms the retry: sooner when a new report arrived, later after each
    /// attempt that left reports waiting, not at all when none wait.
    private func updateReportsPending(_ count: Int) {
        if count > reportsPending { deliveryBackoff = Self.firstDeliveryRetry }
        reportsPending = count
        metricsChanged()
        guard count > 0, helper != nil else {
            deliveryBackoff = Self.firstDeliveryRetry
            return deliveryTimer.disarm()
        }
        deliveryTimer.arm(after: deliveryBackoff)
        deliveryBackoff = min(deliveryBackoff * 2, Self.lastDeliveryRetry)
    }

    private func publishTrust(_ round: TrustRound) {
        let before = trustSummary
        trustRound = round
        metrics.count(round)
        for warning in round.warnings where loggedTrustWarnings.insert(warning).inserted { Log.warning("trust: \(warning)") }
        // Reports are on disk (reachd-trust spools them before it answers): now they may be signalled.
        for report in round.reports {
            object.emit("PinFailure", report)
            let head = try? JSONDecoder().decode(PinFailureReportHead.self, from: Data(report.utf8))
            Log.warning("trust: pin failure for \(head?.hostname ?? "?"): \(head?.validationResult ?? "?") (report spooled)")
        }
        updateReportsPending(round.reportsPending)
        guard trustSummary != before || !round.reports.isEmpty else { return }
        announceTrust()
    }

    /// A round that gave no result (reachd-trust crashed, or the config on disk no
    /// longer reads): the last verdict is not kept as if it still held — an
    /// attacker able to crash the checker must not keep `ok` standing.
    private func forgetTrust(_ failure: TrustHelper.Failure) {
        Log.error("trust: \(failure); the verdict is unknown until a round completes")
        guard trustRound != nil else { return }
        trustRound = nil
        announceTrust()
    }

    /// The verdict changed: the log, the Trust property, TrustChanged and the metrics.
    private func announceTrust() {
        Log.notice("trust: \(trustSummary.rawValue)")
        if var path = current {
            path.trust = trustSummary
            current = path
            object.update(properties(of: path))
        }
        object.emit("TrustChanged", trustSummary.rawValue, trustStatus())
        metricsChanged()
    }

    private func handle(_ message: Message) {
        switch message {
        case let .resolved(request, addresses):
            guard let pending = pendingRoutes.removeValue(forKey: request) else { return }
            answerRoute(pending.destination, addresses: addresses, reply: pending.reply)
        case let .probed(generation, verdict):
            guard connectivity.schedule.finish(generation, verdict) else { return }
            refreshConnectivity()
            connectivity.answerWaiters(with: current?.connectivity)
        }
    }

    // MARK: The object's methods

    func describe() -> String {
        guard var path = current else { return Path.unknown().jsonString() }
        path.trust = trustSummary
        return path.jsonString()
    }

    /// Name resolutions in flight, per caller and in all: each holds a thread
    /// while it waits for DNS, so no caller may queue them without bound.
    static let routesPerCaller = 4
    static let routesInFlight = 32

    func route(to destination: String, caller: String, reply: @escaping (Result<String, BusMethodError>) -> Void) {
        if let literal = IPAddress(destination) { return answerRoute(destination, addresses: [literal], reply: reply) }
        guard HostResolver.isHostName(destination) else {
            let shown = destination.utf8.count > 64 ? String(decoding: destination.utf8.prefix(64), as: UTF8.self) + "…" : destination
            return reply(.failure(.init("org.freedesktop.DBus.Error.InvalidArgs",
                                        "\"\(shown)\" is neither an IP address nor a host name (at most 253 bytes of letters, digits, '-', '_' and dots)")))
        }
        if pendingRoutes.count >= Self.routesInFlight {
            return reply(.failure(.limitsExceeded("\(Self.routesInFlight) Route() lookups are resolving already; try again")))
        }
        if pendingRoutes.values.count(where: { $0.caller == caller }) >= Self.routesPerCaller {
            return reply(.failure(.limitsExceeded("at most \(Self.routesPerCaller) Route() lookups of one caller resolve at once")))
        }
        nextRequest += 1
        let request = nextRequest
        pendingRoutes[request] = (destination, caller, reply)
        let mailbox = mailbox
        DispatchQueue.global().async {
            mailbox.post(.resolved(request: request, addresses: (try? HostResolver.resolve(destination)) ?? []))
        }
    }

    private func answerRoute(_ destination: String, addresses: [IPAddress], reply: (Result<String, BusMethodError>) -> Void) {
        guard !addresses.isEmpty else {
            return reply(.failure(.init("io.reachd.Reachability1.Error.UnknownHost", "cannot resolve \(destination)")))
        }
        var path = MonitorLoop.evaluate(engine, target: .host(destination), addresses: addresses)
        path.source = .daemon
        path.trust = trustSummary
        reply(.success(path.jsonString()))
    }

    /// `{"hosts": [...], "reports-pending": N, "trust": "..."}` (keys sorted, as reachd-trust writes them).
    func trustStatus() -> String {
        "{\"hosts\":\(trustRound?.hosts ?? "[]"),\"reports-pending\":\(reportsPending),\"trust\":\"\(trustSummary.rawValue)\"}"
    }

    func recheckTrust() throws(BusMethodError) {
        guard checksTrust else { throw .failed("no trust hosts are configured") }
        if let last = lastRecheckRequest, last.duration(to: .now) < .seconds(10) {
            throw .limitsExceeded("RecheckTrust is rate-limited to once per 10 s")
        }
        lastRecheckRequest = .now
        startTrustCheck(reason: "RecheckTrust")
    }

    func checkConnectivity(reply: @escaping (Result<String, BusMethodError>) -> Void) {
        connectivity.checkNow(reply: reply)
    }

    func reload() throws(BusMethodError) {
        do {
            try reloadConfiguration()
        } catch {
            throw .failed("\(error)")
        }
    }

    /// Re-reads the config; a bad one is reported and the running one stays in force.
    func reloadConfiguration() throws {
        notify("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())")
        defer { notify("READY=1") }
        let fresh: DaemonConfiguration
        let freshEngine: PathEngine
        do {
            fresh = try DaemonConfiguration.load(configFile, helper: helper)
            freshEngine = try PathEngine(options: fresh.monitor)
            try startMetrics(fresh.metrics)
        } catch {
            Log.error("reload: \(error); the previous configuration stays in force")
            throw error
        }
        engineWatch?.cancel()
        metrics.earlierOverruns += engine.statistics.overruns
        engine = freshEngine
        try watchEngine()
        if fresh.connectivity != configuration.connectivity {
            trustAfterProbe = nil
            connectivity.reconfigure(fresh.connectivity)
        }
        configuration = fresh
        trustGeneration += 1
        trustRound = nil
        trustValidated = false
        loggedTrustWarnings = []
        trustTimer.disarm()
        updateReportsPending(fresh.trust.reportsPending)
        Log.notice("reloaded \(configFile)")
        publishCurrentPath()
        startTrustCheck(reason: "reload")
    }

    // MARK: Metrics

    /// Opens what `options` names and closes what it no longer does; a listener that
    /// cannot bind throws before anything changed (a reload then keeps the old config).
    private func startMetrics(_ options: MetricsOptions) throws {
        if options.listen != metricsServer?.address {
            let server = try options.listen.map { address in
                try MetricsServer(address: address, loop: loop, log: { Log.warning($0) }) { [unowned self] format in
                    metricsFamilies().exposition(format)
                }
            }
            metricsServer = server
            if let server { Log.info("metrics: serving http://\(server.address)/metrics") }
        }
        if options.textfile != metricsTextfile?.path {
            metricsTextfile?.remove()
            metricsTextfile = options.textfile.map { MetricsTextfile(path: $0, log: { Log.warning($0) }) }
        }
    }

    private func metricsFamilies() -> [MetricFamily] {
        metrics.families(DaemonMetrics.State(status: current?.status ?? .unknown, connectivity: current?.connectivity ?? .unknown,
                                             trust: trustSummary, round: checksTrust ? trustRound : nil,
                                             overruns: engine.statistics.overruns, reportsPending: reportsPending))
    }

    /// The textfile follows every change (the listener renders at each scrape).
    private func metricsChanged() {
        guard let metricsTextfile else { return }
        metricsTextfile.update(metricsFamilies().exposition(.prometheus))
    }

    static func monotonicMicroseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1000
    }

    func notify(_ state: String) { _ = sd_notify(0, state) }
}
