import CSystemd
import DaemonCore
import Dispatch
import FoundationEssentials
import ReachabilityBus
import ReachdMetrics
import Sockets
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
        case watchResolved(key: String, addresses: [IPAddress])
        case probed(generation: Int, verdict: ConnectivityProbe.Verdict)
    }

    let configFile: String
    let loop: EventLoop
    let object: ReachabilityObject
    let mailbox: Mailbox<Message>

    private var configuration: DaemonConfiguration
    /// The event algorithm (`PathWatcher`, shared with the library's monitor) on this loop.
    private var watcher: PathWatcher!
    private var engine: PathEngine { watcher.engine }
    private var engineWatch: EventLoop.Watch?
    private var current: Path?
    private var isReady = false
    private var lastLoggedLine = ""

    private let helper: TrustHelper?
    /// reachd-trust's runs in flight, read on the loop (the loop never waits for a child).
    private let helperRuns: HelperRuns
    /// When rounds and report deliveries run in reachd-trust.
    private var trust: TrustScheduler!
    private var trustRound: TrustRound?
    /// Any user may ask; each user at most once per 10 s, root always (docs/security.md).
    private var recheckLimit = PerUserRateLimit(interval: .seconds(10))
    /// Shared by CheckConnectivity() and the NetworkManager surface's.
    private var probeLimit = PerUserRateLimit(interval: .seconds(10))
    /// Warnings about the config (a pin set with no backup key) come with every
    /// round; the log says each once per config loaded.
    private var loggedTrustWarnings: Set<String> = []

    private var connectivity: ConnectivityChecker!
    /// The network's captive-portal API (RFC 8910/8908): where it was learnt, what it answered.
    private var capport: CaptivePortalChecker!
    /// Without a probe, the evidence of `full` (docs/connectivity.md): a host's chain validated in the latest round.
    private var trustValidated = false

    private var metrics = DaemonMetrics()
    private var metricsServer: MetricsServer?
    private var metricsTextfile: MetricsTextfile?

    /// The NetworkManager-compatible surface: on the bus, when there is one.
    private var compat: NetworkManagerCompat?

    /// Name resolutions in flight for Route() and WatchPath(), by request.
    private var pendingResolutions: [Int: (caller: String, done: ([IPAddress]) -> Void)] = [:]
    private var nextRequest = 0
    /// WatchPath()'s watches, evaluated after each batch of events that could change a path.
    private var watches = PathWatches()

    /// The resolvers the path's `dns` is judged against.
    private var resolvers: ResolverFollower!

    init(configFile: String, configuration: DaemonConfiguration, helper: TrustHelper?, loop: EventLoop) throws {
        self.configFile = configFile
        self.configuration = configuration
        self.helper = helper
        self.loop = loop
        helperRuns = try HelperRuns(loop: loop)
        mailbox = try Mailbox()
        let engine = try PathEngine(options: configuration.monitor)
        object = try ReachabilityObject(loop: loop)
        let watcherTimer = try loop.timer { [unowned self] in watcher.timerFired() }
        watcher = PathWatcher(
            engine: engine, timer: .init(arm: { watcherTimer.arm(after: $0) }, disarm: { watcherTimer.disarm() }),
            evaluate: { $0.evaluateDefaultPath() },
            offer: { [unowned self] in pathEvaluated($0) },
            interfacesChanged: { [unowned self] in interfacesChanged($0) },
            log: { Log.warning($0) })
        object.delegate = self
        // Interface changes are kept and rendered only while someone watches them.
        object.onInterfaceWatchers = { [unowned self] watched in
            self.engine.tracksInterfaces = watched
            Log.debug(watched ? "interface changes: kept (someone watches them)" : "interface changes: not kept (nobody watches them)")
        }
        object.onPathWatches = { [unowned self] held in
            watches.keep(only: held)
            engine.alsoWatched = watches.addresses
        }
        let mailbox = mailbox
        connectivity = try ConnectivityChecker(options: configuration.connectivity, loop: loop) {
            mailbox.post(.probed(generation: $0, verdict: $1))
        }
        capport = try CaptivePortalChecker(options: configuration.connectivity, loop: loop, changed: { [unowned self] in
            if let current { capport.observe(current, engine: engine) }
            republish()
        }, start: { [unowned self] target, generation in startCaptivePortalQuery(target, generation: generation) })
        let roundTimer = try loop.timer { [unowned self] in trust.requestRound("interval") }
        let deliveryTimer = try loop.timer { [unowned self] in trust.requestDelivery("retry") }
        let spacingTimer = try loop.timer { [unowned self] in trust.spacingElapsed() }
        trust = TrustScheduler(
            isEnabled: Self.checksTrust(configuration, helper), canDeliver: helper != nil,
            recheck: Self.recheck(configuration), interval: .seconds(configuration.trust.interval),
            roundTimer: .init(arm: { roundTimer.arm(after: $0) }, disarm: { roundTimer.disarm() }),
            deliveryTimer: .init(arm: { deliveryTimer.arm(after: $0) }, disarm: { deliveryTimer.disarm() }),
            spacingTimer: .init(arm: { spacingTimer.arm(after: $0) }, disarm: { spacingTimer.disarm() }),
            isAwaitingProbe: { [unowned self] in connectivity.schedule.isAwaitingFirstVerdict || capport.schedule.isAwaitingFirstAnswer },
            mayDeliver: { [unowned self] in mayDeliverReports },
            start: { [unowned self] job, reason in startHelper(job, reason: reason) })
        try loop.onReadable(mailbox.descriptor) { [unowned self] in
            for message in mailbox.take() { handle(message) }
        }
        try watchEngine()
        resolvers = ResolverFollower(loop: loop) { [unowned self] servers in dnsChanged(servers) }
        try resolvers.follow(resolvConf: configuration.monitor.resolvConf)
        try startMetrics(configuration.metrics)
        updateReportsPending(configuration.trust.reportsPending)
    }

    /// Whether trust is checked at all: hosts configured and the helper there.
    private static func checksTrust(_ configuration: DaemonConfiguration, _ helper: TrustHelper?) -> Bool {
        configuration.trust.hosts > 0 && helper != nil
    }

    private static func recheck(_ configuration: DaemonConfiguration) -> TrustScheduler.Recheck {
        TrustScheduler.Recheck(rawValue: configuration.trust.recheck) ?? .onChange
    }

    private func watchEngine() throws {
        engineWatch = try loop.onReadable(engine.fileDescriptor) { [unowned self] in
            let overruns = engine.statistics.overruns
            watcher.readable()
            if engine.statistics.overruns != overruns { metricsChanged() }
        }
    }

    // MARK: DNS

    private func dnsChanged(_ servers: DNSServers?) {
        engine.dnsServers = servers
        Log.info("dns: \(servers?.source.rawValue ?? "not followed"): \(servers?.servers.map(\.address.description).joined(separator: " ") ?? "")")
        if isReady { publishCurrentPath() }
    }

    // MARK: The path

    /// Evaluates the path and publishes it when it changed.
    func publishCurrentPath() { watcher.evaluateNow() }

    /// A path the watcher evaluated: published when it changed — properties,
    /// StatusChanged, STATUS=, and READY=1 the first time.
    private func pathEvaluated(_ evaluated: Path) {
        var path = evaluated
        path.source = .daemon
        path.initial = false
        connectivity.observe(path)
        capport.observe(path, engine: engine)
        let before = current
        let published = publish(path)
        if published, let before, !before.leavesTheSameWay(as: path) { resolveWatchesAgain() }
        refreshWatches()
        guard published else { return }
        trust.pathChanged(first: !isReady)
        isReady = true
    }

    /// Publishes `fresh` with the current trust verdict and connectivity when the
    /// document differs from the current one. Every change of the document goes
    /// through here — a path, connectivity or trust change is one StatusChanged —
    /// so that what subscribers hold is always what `Describe()` answers.
    @discardableResult
    private func publish(_ fresh: Path) -> Bool {
        var path = fresh
        path.trust = trustSummary
        (path.connectivity, path.portal) = connectivity.schedule.state(
            of: path, unprobed: ConnectivityScheduler.unprobed(path, validated: trustValidated))
        if path.status.isReachable {
            path.capport = capport.schedule.state
            // The network's own word is stronger than a probe's guess (docs/connectivity.md): captive is a portal at its
            // page; not captive leaves the probe to decide, so it never makes a failing path full.
            if let announced = path.capport, announced.captive == true { (path.connectivity, path.portal) = (.portal, announced.userPortalURL) }
        }
        guard let path = path.succeeding(current) else { return false }
        let before = current?.connectivity
        current = path
        object.publish(properties(of: path), status: path.status.rawValue, document: path.jsonString())
        compat?.publish(path)
        metrics.pathChanges += 1
        metricsChanged()
        let line = Self.describe(path)
        // Changes of the available interfaces publish a document too; the log says when the status line moves.
        if line != lastLoggedLine { Log.info("path: \(line)") } else { Log.debug("path: \(line) (interfaces changed)") }
        lastLoggedLine = line
        if before != path.connectivity, path.status.isReachable {
            let details = connectivity.schedule.verdict.map { " (\($0.details.joined(separator: "; ")))" } ?? ""
            Log.info("connectivity: \(path.connectivity.rawValue)\(path.portal.map { " at \($0)" } ?? "")\(details)")
        }
        notify(isReady ? "STATUS=\(line)" : "READY=1\nSTATUS=\(line)")
        return true
    }

    /// Connectivity or trust may have changed without the path (a probe answered, a
    /// round ended): publish the document; leaving or entering a portal re-judges trust.
    private func republish() {
        guard let path = current else { return }
        let before = path.connectivity
        let couldDeliver = mayDeliverReports
        publish(path)
        let after = current?.connectivity ?? before
        refreshWatches()
        trust.connectivityPublished(portalChanged: (before == .portal) != (after == .portal), connectivity: after.rawValue)
        if !couldDeliver && mayDeliverReports { trust.requestDelivery("connectivity full") }
    }

    /// Reports go out only over a path that reaches the Internet unaltered: never
    /// over the one that failed them, nor through a portal (docs/security.md).
    private var mayDeliverReports: Bool {
        current?.connectivity == .full && trustSummary != .compromised && trustSummary != .portal
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
        properties.supportsDNS = path.supportsDNS ?? false
        properties.dnsServers = path.dns?.usable ?? []
        if let capport = path.capport {
            properties.captivePortalAPI = capport.api
            properties.captivePortalSource = capport.source.rawValue
            properties.captivePortalStatus = capport.captive.map { $0 ? "captive" : "not-captive" } ?? "unknown"
            properties.venueInfoURL = capport.venueInfoURL ?? ""
            properties.sessionExpires = capport.expires.map { UInt64(max(0, $0.timeIntervalSince1970)) } ?? 0
            properties.bytesRemaining = capport.bytesRemaining ?? -1
            properties.canExtendSession = capport.canExtendSession ?? false
        }
        return properties
    }

    static func describe(_ path: Path) -> String {
        var text = path.status.rawValue
        if let reason = path.reason { text += " (\(reason.rawValue))" }
        if let interface = path.interface { text += " dev \(interface.name)" }
        if let vpn = path.vpn { text += " vpn \(vpn.name)" }
        return text
    }

    /// Interfaces changed: InterfaceChanged to those who watch them.
    private func interfacesChanged(_ changes: [InterfaceChange]) {
        object.publishInterfaces(changes.map { ($0.index, $0.interface.name, $0.jsonString()) })
    }

    // MARK: Trust

    private var trustSummary: TrustSummary {
        guard trust.isEnabled else { return .none }
        guard let trustRound else { return .unknown }
        return TrustSummary(rawValue: trustRound.overall) ?? .unknown
    }

    /// Starts reachd-trust for what the scheduler asks; false when it could not start.
    private func startHelper(_ job: TrustScheduler.Job, reason: String) -> Bool {
        guard let helper else { return false }
        do {
            switch job {
            case .round:
                Log.debug("trust: checking \(configuration.trust.hosts) hosts (\(reason))")
                var path = current.map { [$0.status.rawValue, $0.interface?.name ?? "", $0.connectivity.rawValue] } ?? []
                if current?.connectivity == .portal {
                    // The evidence, for the reports of failures seen behind the portal: the probe's answer, and what
                    // the network's API said — announced it, said it is not captive (the redirect is suspect), or nothing.
                    let verdict = connectivity.schedule.verdict
                    let announced = current?.capport
                    let evidence = switch announced?.captive {
                    case true?: "announced"
                    case false?: "contradicted"
                    case nil: "redirect"
                    }
                    path += [verdict?.httpStatus.map(String.init) ?? "", verdict?.portal ?? "", evidence, announced?.api ?? "",
                             announced?.userPortalURL ?? ""]
                }
                try helper.startCheck(configFile, path: path, within: configuration.trust.roundBudget(reportsPending: trust.reportsPending), runs: helperRuns) {
                    [unowned self] result in finishRound(job, result)
                }
            case .delivery:
                Log.debug("trust: delivering \(trust.reportsPending) waiting reports (\(reason))")
                try helper.startDelivery(configFile, within: configuration.trust.deliveryBudget(reports: trust.reportsPending), runs: helperRuns) {
                    [unowned self] result in finishDelivery(result)
                }
            }
            return true
        } catch {
            Log.error("trust: \(error)")
            return false
        }
    }

    private func finishRound(_ job: TrustScheduler.Job, _ result: Result<TrustRound, TrustHelper.Failure>) {
        // A round started before a reload is stale.
        if trust.finished(job) {
            switch result {
            case let .success(round):
                trustValidated = round.summaries.contains { TrustHostSummary.validatedVerdicts.contains($0.verdict) }
                publishTrust(round)
            case let .failure(failure) where failure.timedOut:
                trustValidated = false
                abandonRound(failure)
            case let .failure(failure):
                trustValidated = false
                forgetTrust(failure)
            }
            republish()
        }
        trust.runWaitingRound(after: job)
    }

    private func finishDelivery(_ result: Result<TrustDelivery, TrustHelper.Failure>) {
        trust.finished(.delivery)
        switch result {
        case let .success(delivery):
            if delivery.delivered > 0 { Log.notice("trust: \(delivery.delivered) waiting reports delivered") }
            for warning in delivery.warnings { Log.info("trust: \(warning)") }
            updateReportsPending(delivery.reportsPending)
        case let .failure(failure):
            Log.error("trust: \(failure)")
            updateReportsPending(trust.reportsPending)
        }
        trust.runWaitingRound(after: .delivery)
    }

    private func updateReportsPending(_ count: Int) {
        trust.reportsPending(count)
        metricsChanged()
    }

    private func publishTrust(_ round: TrustRound) {
        let before = trustSummary
        trustRound = round
        metrics.count(round)
        for warning in round.warnings where loggedTrustWarnings.insert(warning).inserted { Log.warning("trust: \(warning)") }
        for name in round.evicted { Log.warning("trust: report \(name) evicted to keep the spool within its capacity") }
        // Reports are on disk (reachd-trust spools them before it answers): now they may be signalled.
        for report in round.reports {
            object.emit("PinFailure", report)
            let head = try? JSONDecoder().decode(PinFailureReportHead.self, from: Data(report.utf8))
            let portal = head?.captivePortal.map { portal in
                let probe = "the probe got \(portal.httpStatus.map(String.init) ?? "no HTTP answer")\(portal.location.map { " to \($0)" } ?? "")"
                return switch portal.evidence {
                case "announced": " behind a captive portal announced by \(portal.api ?? "the network")"
                case "contradicted": " where \(probe), yet \(portal.api ?? "the network's API") says the network is not captive"
                default: " behind a captive portal (\(probe))"
                }
            } ?? ""
            Log.warning("trust: pin failure for \(head?.hostname ?? "?")\(portal): \(head?.validationResult ?? "?") (report spooled)")
        }
        updateReportsPending(round.reportsPending)
        guard trustSummary != before || !round.reports.isEmpty else { return }
        announceTrust()
    }

    /// A round past its budget, killed: every host is `unknown` (not judged), with
    /// the reason, and the next round runs as any other. A helper stopped, or held
    /// by a server that trickles bytes, must not keep the last verdict standing.
    private func abandonRound(_ failure: TrustHelper.Failure) {
        Log.error("trust: \(failure); every host is unknown until a round completes")
        metrics.roundsKilled += 1
        let checkedAt = Date()
        let hosts = configuration.trust.probed.map { UnjudgedHost(host: $0.host, port: $0.port, reason: "not judged: \(failure)", checkedAt: checkedAt) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let before = trustSummary
        // Every host keeps its verdict series (now `unknown`): an absent series never means "fine".
        let summaries = hosts.map { TrustHostSummary(host: $0.host, verdict: $0.verdict, pinFailure: false, pinFailureBehindPortal: false,
                                                     certificateExpires: nil) }
        trustRound = TrustRound(overall: TrustSummary.unknown.rawValue,
                                hosts: String(decoding: (try? encoder.encode(hosts)) ?? Data("[]".utf8), as: UTF8.self), reports: [], warnings: [],
                                reportsPending: trust.reportsPending, summaries: summaries, evicted: [])
        if trustSummary != before { announceTrust() } else { object.publishTrust(trustSummary.rawValue, document: trustStatus()) }
    }

    /// A host of the TrustStatus document that no round judged.
    private struct UnjudgedHost: Encodable {
        var host: String
        var port: Int
        var pattern: String
        var verdict = "unknown"
        var reason: String
        var enforced = true
        var presentedPins: [String] = []
        var checkedAt: Date

        init(host: String, port: Int, reason: String, checkedAt: Date) {
            (self.host, self.port, pattern, self.reason, self.checkedAt) = (host, port, host, reason, checkedAt)
        }

        enum CodingKeys: String, CodingKey {
            case host, port, pattern, verdict, reason, enforced, presentedPins = "presented-pins", checkedAt = "checked-at"
        }
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

    /// The verdict changed: the log, TrustChanged and the metrics. The path
    /// document carries the verdict too: the caller republishes it.
    private func announceTrust() {
        Log.notice("trust: \(trustSummary.rawValue)")
        object.publishTrust(trustSummary.rawValue, document: trustStatus())
        metricsChanged()
    }

    private func handle(_ message: Message) {
        switch message {
        case let .resolved(request, addresses):
            pendingResolutions.removeValue(forKey: request)?.done(addresses)
        case let .watchResolved(key, addresses):
            guard watches[key] != nil else { return }
            watches.resolved(key, addresses: addresses)
            engine.alsoWatched = watches.addresses
            refreshWatches()
        case let .probed(generation, verdict):
            let before = connectivity.schedule.verdict?.connectivity
            guard connectivity.schedule.finish(generation, verdict) else { return }
            // The probe's view moved (someone logged in, a session ended): the API is asked too.
            if before != nil, before != verdict.connectivity { capport.schedule.queryNow() }
            republish()
            connectivity.probeAnswered(current?.connectivity)
        }
    }

    // MARK: The captive-portal API

    /// Starts one API query in reachd-trust; false when it cannot run.
    private func startCaptivePortalQuery(_ target: CaptivePortalAPIScheduler.Target, generation: Int) -> Bool {
        let notStarted = { [unowned self] in
            connectivity.captivePortalAPIAnswered(current?.connectivity)
            return false
        }
        guard let helper else {
            Log.warning("capport: \(target.uri) is not queried: reachd-trust is not installed")
            return notStarted()
        }
        do {
            try helper.startCaptivePortalQuery(target.uri, interfaceIndex: target.interfaceIndex, timeout: capport.timeout,
                                               anchors: capport.anchors, runs: helperRuns) { [unowned self] answer in
                captivePortalAnswered(generation, answer)
            }
            return true
        } catch {
            Log.error("capport: \(error)")
            return notStarted()
        }
    }

    private func captivePortalAnswered(_ generation: Int, _ answer: CaptivePortalAPIAnswer) {
        // CheckConnectivity() callers are answered once no query of the API runs, whatever this one said.
        defer { if !capport.schedule.isRunning { connectivity.captivePortalAPIAnswered(current?.connectivity) } }
        let before = capport.schedule.state
        guard capport.schedule.finish(generation, answer), let state = capport.schedule.state else { return }
        let api = "\(state.api) (\(state.source.rawValue), \(state.interface))"
        if let error = state.error {
            if error != before?.error { Log.warning("capport: \(api): \(error)") }
        } else if state.captive != before?.captive || state.expires != before?.expires {
            let session = state.secondsRemaining().map { ", the session ends in \($0) s" } ?? ""
            Log.notice("capport: \(api) says \(state.captive == true ? "captive, log in at \(state.userPortalURL ?? "")" : "not captive")\(session)")
        }
        metricsChanged()
        let wasPortal = current?.connectivity == .portal
        republish()
        // Still a portal, on other evidence (the API now announces it, or contradicts the probe's redirect): judged again.
        if wasPortal, current?.connectivity == .portal, before?.captive != state.captive { trust.requestRound("captive-portal API") }
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
        resolve(destination, for: "Route()", caller: caller, failure: { reply(.failure($0)) }) { [unowned self] addresses in
            answerRoute(destination, addresses: addresses, reply: reply)
        }
    }

    /// The addresses of an IP address or host name, resolved off the loop under the
    /// per-caller limits; `failure` when the argument is neither, or a limit is reached.
    private func resolve(_ destination: String, for method: String, caller: String, failure: (BusMethodError) -> Void,
                         then done: @escaping ([IPAddress]) -> Void) {
        if let literal = IPAddress(destination) { return done([literal]) }
        guard HostResolver.isHostName(destination) else {
            let shown = destination.utf8.count > 64 ? String(decoding: destination.utf8.prefix(64), as: UTF8.self) + "…" : destination
            return failure(.init("org.freedesktop.DBus.Error.InvalidArgs",
                                 "\"\(shown)\" is neither an IP address nor a host name (at most 253 bytes of letters, digits, '-', '_' and dots)"))
        }
        if pendingResolutions.count >= Self.routesInFlight {
            return failure(.limitsExceeded("\(Self.routesInFlight) Route() and WatchPath() lookups are resolving already; try again"))
        }
        if pendingResolutions.values.count(where: { $0.caller == caller }) >= Self.routesPerCaller {
            return failure(.limitsExceeded("at most \(Self.routesPerCaller) \(method) lookups of one caller resolve at once (Route() and WatchPath() together)"))
        }
        nextRequest += 1
        let request = nextRequest
        pendingResolutions[request] = (caller, done)
        let mailbox = mailbox
        DispatchQueue.global().async {
            mailbox.post(.resolved(request: request, addresses: (try? HostResolver.resolve(destination)) ?? []))
        }
    }

    // MARK: Watched paths

    func watchPath(destination: String, interfaceTypes: String, caller: String,
                   reply: @escaping (Result<(key: String, document: String), BusMethodError>) -> Void) {
        let types: Set<InterfaceType>
        do {
            types = try InterfaceType.parseList(interfaceTypes)
        } catch {
            return reply(.failure(.init("org.freedesktop.DBus.Error.InvalidArgs", "\(error)")))
        }
        let request = PathWatchRequest(destination: destination, interfaceTypes: types)
        let key = request.key
        let answer = { [unowned self] in
            guard let path = watches.current(key, evaluate) else {
                return reply(.failure(.failed("the watch ended before it was answered")))
            }
            reply(.success((key, path.jsonString())))
        }
        if watches[key] != nil { return answer() }
        guard !watches.isFull else {
            return reply(.failure(.limitsExceeded("\(PathWatches.limit) paths are watched already")))
        }
        guard !destination.isEmpty else {
            watches.insert(request, addresses: [])
            return answer()
        }
        resolve(destination, for: "WatchPath()", caller: caller, failure: { reply(.failure($0)) }) { [unowned self] addresses in
            // A name that does not resolve is watched all the same: its path is `unknown` until it does.
            watches.insert(request, addresses: addresses)
            engine.alsoWatched = watches.addresses
            answer()
        }
    }

    /// One watch's path, as the document of the default path is built: the trust verdict,
    /// and connectivity when it leaves the way the probed path does (else unknown).
    private func evaluate(_ watch: PathWatches.Watch) -> Path {
        let destination = watch.request.destination
        var path = MonitorLoop.evaluate(engine, target: destination.isEmpty ? .defaultPath : .host(destination),
                                        addresses: watch.addresses, watch: false, allowed: watch.request.interfaceTypes)
        path.source = .daemon
        path.trust = trustSummary
        if let current, path.leavesTheSameWay(as: current) {
            (path.connectivity, path.portal) = (current.connectivity, current.portal)
        }
        return path
    }

    /// Publishes the watched paths that changed (PathChanged, to those who hold them).
    private func refreshWatches() {
        for (key, path) in watches.refresh(evaluate) { object.publishWatchedPath(key: key, document: path.jsonString()) }
    }

    /// The default path leaves another way: a new network, or a VPN's DNS, often
    /// answers with other addresses for the watched names.
    private func resolveWatchesAgain() {
        let mailbox = mailbox
        for (key, name) in watches.namedDestinations {
            DispatchQueue.global().async {
                mailbox.post(.watchResolved(key: key, addresses: (try? HostResolver.resolve(name)) ?? []))
            }
        }
    }

    private func answerRoute(_ destination: String, addresses: [IPAddress], reply: (Result<String, BusMethodError>) -> Void) {
        guard !addresses.isEmpty else {
            return reply(.failure(.init("io.reachd.Reachability1.Error.UnknownHost", "cannot resolve \(destination)")))
        }
        var path = MonitorLoop.evaluate(engine, target: .host(destination), addresses: addresses, watch: false)
        path.source = .daemon
        path.trust = trustSummary
        reply(.success(path.jsonString()))
    }

    func interfaces() -> String { InterfaceChange.jsonArray(engine.inventory()) }

    /// `{"hosts": [...], "reports-pending": N, "trust": "..."}` (keys sorted, as reachd-trust writes them).
    func trustStatus() -> String {
        "{\"hosts\":\(trustRound?.hosts ?? "[]"),\"reports-pending\":\(trust.reportsPending),\"trust\":\"\(trustSummary.rawValue)\"}"
    }

    func recheckTrust(caller: uid_t?) throws(BusMethodError) {
        guard trust.isEnabled else { throw .failed("no trust hosts are configured") }
        guard recheckLimit.admit(caller) else { throw .limitsExceeded("RecheckTrust is rate-limited to once per 10 s for each user") }
        trust.requestRound("RecheckTrust")
    }

    func checkConnectivity(caller: uid_t?, reply: @escaping (Result<String, BusMethodError>) -> Void) {
        guard probeLimit.admit(caller) else {
            return reply(.failure(.limitsExceeded("CheckConnectivity is rate-limited to once per 10 s for each user")))
        }
        connectivity.checkNow(captivePortalAPI: capport.schedule.hasAPI, reply: reply)
        capport.schedule.queryNow()
    }

    func reload(reply: @escaping (Result<String, BusMethodError>) -> Void) {
        reloadConfiguration { result in reply(result.mapError { .failed("\($0)") }.map { "" }) }
    }

    /// A reload waiting for its config check.
    private var reloading = false

    /// Re-reads the config; a bad one is reported and the running one stays in force.
    /// The helper checks `[trust]` while the loop goes on; `done` runs once the new
    /// config is in force or was refused.
    func reloadConfiguration(_ done: @escaping (Result<Void, any Error>) -> Void = { _ in }) {
        guard !reloading else { return done(.failure(DaemonConfiguration.Failure(description: "a reload is already in progress"))) }
        notify("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())")
        let refuse = { [unowned self] (error: any Error) in
            reloading = false
            Log.error("reload: \(error); the previous configuration stays in force")
            notify("READY=1")
            done(.failure(error))
        }
        let parsed: DaemonConfiguration
        do {
            parsed = try DaemonConfiguration.parse(configFile, helperInstalled: helper != nil)
        } catch {
            return refuse(error)
        }
        reloading = true
        guard let helper, access(configFile, F_OK) == 0 else { return apply(parsed, refuse: refuse, done) }
        do {
            try helper.startConfigCheck(configFile, runs: helperRuns) { [unowned self] result in
                switch result {
                case let .success(summary):
                    var checked = parsed
                    checked.trust = summary
                    apply(checked, refuse: refuse, done)
                case let .failure(failure):
                    refuse(failure)
                }
            }
        } catch {
            refuse(error)
        }
    }

    private func apply(_ fresh: DaemonConfiguration, refuse: (any Error) -> Void, _ done: (Result<Void, any Error>) -> Void) {
        let freshEngine: PathEngine
        do {
            freshEngine = try PathEngine(options: fresh.monitor)
            try startMetrics(fresh.metrics)
        } catch {
            return refuse(error)
        }
        engineWatch?.cancel()
        metrics.earlierOverruns += engine.statistics.overruns
        watcher.replace(freshEngine)
        freshEngine.alsoWatched = watches.addresses
        freshEngine.dnsServers = resolvers.servers
        do {
            try resolvers.follow(resolvConf: fresh.monitor.resolvConf)
        } catch {
            Log.error("reload: \(error)")
        }
        do {
            try watchEngine()
            try configureCompat(fresh)
        } catch {
            Log.error("reload: \(error)")
        }
        let connectivityChanged = fresh.connectivity != configuration.connectivity
        trust.reconfigure(isEnabled: Self.checksTrust(fresh, helper), canDeliver: helper != nil, recheck: Self.recheck(fresh),
                          interval: .seconds(fresh.trust.interval), connectivityChanged: connectivityChanged)
        if connectivityChanged {
            connectivity.reconfigure(fresh.connectivity)
            do {
                try capport.reconfigure(fresh.connectivity)
            } catch {
                Log.error("reload: \(error)")
            }
        }
        configuration = fresh
        trustRound = nil
        trustValidated = false
        loggedTrustWarnings = []
        updateReportsPending(fresh.trust.reportsPending)
        reloading = false
        Log.notice("reloaded \(configFile)")
        publishCurrentPath()
        trust.requestRound("reload")
        notify("READY=1")
        done(.success(()))
    }

    // MARK: NetworkManager compatibility

    /// The bus the daemon is on (nil: none): where `[compat] networkmanager` is served.
    func attach(bus: BusConnection?) throws {
        if let bus {
            try resolvers.followResolved(on: bus)
            compat = try NetworkManagerCompat(connection: bus, loop: loop) { [unowned self] caller, done in
                checkConnectivity(caller: caller) { _ in done() }
            }
        }
        try configureCompat(configuration)
    }

    private func configureCompat(_ configuration: DaemonConfiguration) throws {
        guard let compat else {
            if configuration.networkManagerCompat {
                Log.warning("compat: networkmanager = true, but reachd is on no bus (--bus none, or no system bus): nothing serves the surface")
            }
            return
        }
        try compat.configure(enabled: configuration.networkManagerCompat, path: current)
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
                                             trust: trustSummary, round: trust.isEnabled ? trustRound : nil,
                                             overruns: engine.statistics.overruns, reportsPending: trust.reportsPending,
                                             dns: current?.dns, capport: current?.capport, capportQueries: capport.schedule.counts))
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
