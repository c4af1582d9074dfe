import DaemonDecisions
import FoundationEssentials
import NetworkManagerSurface
import ReachabilityBus
import ReachabilityCore
import ReachdMetrics
import SDBus

#if canImport(Glibc)
import Glibc
#endif

/// The daemon: the wiring between its components, all on one event-loop thread.
/// A kernel change reaches it through `PathWatcher`; what it publishes is composed
/// here — the path, the probe's and the captive-portal API's connectivity, the trust
/// verdict — and goes to the bus object, the NetworkManager surface, the metrics and
/// systemd. Each component decides alone and is tested alone: `ConnectivityChecker`,
/// `CaptivePortalChecker`, `TrustCoordinator`, `PathQueries`, `ResolverFollower`,
/// `MetricsOutputs` (docs/development.md, "The rooms").
final class Daemon: ReachabilityObjectDelegate {
    let configFile: String
    let loop: EventLoop
    let object: ReachabilityObject
    /// Where it, and each of its components, says what happened.
    let log: Log

    private var configuration: DaemonConfiguration
    /// The event algorithm (`PathWatcher`, shared with the library's monitor) on this loop.
    private var watcher: PathWatcher!
    private var engine: PathEngine { watcher.engine }
    private var engineWatch: EventLoop.Watch?
    /// The published path (nil until the first evaluation).
    private var current: Path?
    private var isReady = false
    private var lastLoggedLine = ""
    /// A reload waiting for its config check.
    private var reloading = false

    private let helper: TrustHelper?
    /// reachd-trust's runs in flight, read on the loop (the loop never waits for a child).
    private let helperRuns: HelperRuns
    private var trust: TrustCoordinator!
    private var connectivity: ConnectivityChecker!
    /// The network's captive-portal API (RFC 8910/8908): where it was learnt, what it answered.
    private var capport: CaptivePortalChecker!
    /// Route() and WatchPath().
    private var queries: PathQueries!
    /// The resolvers the path's `dns` is judged against.
    private var resolvers: ResolverFollower!
    /// RFC 7050, where the network announces no NAT64 prefix.
    private var nat64: NAT64Discovery!
    /// Every way out but the path's own, each judged by the probe bound to it.
    private var waysOut: WaysOutChecker!
    /// Shared by CheckConnectivity() and the NetworkManager surface's.
    private var probeLimit = PerUserRateLimit(interval: .seconds(10))
    private let metrics = DaemonMetrics()
    private var metricsOutputs: MetricsOutputs!
    /// The NetworkManager-compatible surface: on the bus, when there is one.
    private var compat: NetworkManagerCompat?

    /// How the daemon reaches the kernel: the engines it opens (at start and on each reload)
    /// and the watch on each engine's socket. Tests hand it an embedded kernel, or a watch
    /// that fails to prove a reload that cannot watch its engine keeps the old one.
    struct KernelAccess {
        var openEngine: (MonitorOptions) throws -> PathEngine
        var watch: (_ engine: PathEngine, _ readable: @escaping () -> Void) throws -> EventLoop.Watch

        /// Engines on the netlink sockets — or on `source`, a test's kernel, whatever each config
        /// says (`MonitorOptions.kernel`) — watched on `loop`.
        static func engines(on source: (any KernelSource)? = nil, loop: EventLoop) -> KernelAccess {
            KernelAccess(
                openEngine: { options in
                    var options = options
                    if let source { options.kernel = source }
                    return try PathEngine(options: options)
                }, watch: { try loop.onReadable($0.fileDescriptor, of: $0, $1) })
        }
    }

    private let kernel: KernelAccess

    /// `kernel`: nil for the netlink sockets, watched on `loop`; `resolve`: how the names
    /// `Route()` and `WatchPath()` are handed are resolved (a test's names, or the system's).
    init(
        configFile: String, configuration: DaemonConfiguration, helper: TrustHelper?, loop: EventLoop,
        log: Log, kernel: KernelAccess? = nil, resolve: @escaping PathQueries.Resolve = PathQueries.systemResolver
    ) throws {
        self.configFile = configFile
        self.log = log
        self.configuration = configuration
        self.helper = helper
        self.loop = loop
        self.kernel = kernel ?? .engines(loop: loop)
        helperRuns = try HelperRuns(loop: loop)
        object = try ReachabilityObject(loop: loop)
        let engine = try self.kernel.openEngine(configuration.monitor)
        let watcherTimer = try loop.timer { [unowned self] in watcher.timerFired() }
        watcher = PathWatcher(
            engine: engine, timer: .init(arm: { watcherTimer.arm(after: $0) }, disarm: { watcherTimer.disarm() }),
            evaluate: { $0.evaluateDefaultPath() },
            offer: { [unowned self] in pathEvaluated($0) },
            interfacesChanged: { [unowned self] changes in
                object.publishInterfaces(changes.map { ($0.index, $0.interface.name, $0.jsonString()) })
            },
            log: { [log] in log.warning($0) })
        object.delegate = self
        // Interface changes are kept and rendered only while someone watches them.
        object.onInterfaceWatchers = { [unowned self] watched in
            self.engine.tracksInterfaces = watched
            log.debug(watched ? "interface changes: kept (someone watches them)" : "interface changes: not kept (nobody watches them)")
        }
        metricsOutputs = MetricsOutputs(loop: loop, log: log) { [unowned self] in metricsFamilies() }
        connectivity = try ConnectivityChecker(options: configuration.connectivity, loop: loop) { [unowned self] moved in
            // The probe's view moved (someone logged in, a session ended): the API is asked too.
            if moved { capport.schedule.queryNow() }
            republish()
            connectivity.probeAnswered(current?.connectivity)
        }
        waysOut = try WaysOutChecker(options: configuration.connectivity, loop: loop) { [unowned self] in republish() }
        capport = try CaptivePortalChecker(
            options: configuration.connectivity, helper: helper, runs: helperRuns, loop: loop, log: log,
            hooks: .init(
                changed: { [unowned self] in
                    if let current { capport.observe(current, moved: false, engine: self.engine) }
                    metricsOutputs.changed()
                    republish()
                }, settled: { [unowned self] in connectivity.captivePortalAPIAnswered(current?.connectivity) }))
        trust = try TrustCoordinator(
            configFile: configFile, options: configuration.trust, helper: helper, runs: helperRuns, loop: loop, object: object,
            metrics: metrics, log: log,
            hooks: .init(
                path: { [unowned self] in (current, connectivity.schedule.verdict) },
                isAwaitingEvidence: { [unowned self] in
                    connectivity.schedule.isAwaitingFirstVerdict || capport.schedule.isAwaitingFirstAnswer
                },
                mayDeliver: { [unowned self] in mayDeliverReports },
                finished: { [unowned self] in republish() },
                metricsChanged: { [unowned self] in metricsOutputs.changed() }))
        queries = try PathQueries(
            loop: loop, object: object, engine: { [unowned self] in self.engine },
            judged: { [unowned self] in judged($0) }, resolve: resolve)
        nat64 = try NAT64Discovery(loop: loop, log: log) { [unowned self] prefix, interface in
            let found = prefix.map { (prefix: $0, interface: interface) }
            guard found?.prefix != engine.discoveredNAT64?.prefix || found?.interface != engine.discoveredNAT64?.interface else { return }
            engine.discoveredNAT64 = found
            if let prefix { log.info("nat64: \(prefix) (DNS64, RFC 7050)") }
            publishCurrentPath()
        }
        engineWatch = try watch(engine)
        resolvers = ResolverFollower(loop: loop) { [unowned self] servers in dnsChanged(servers) }
        try resolvers.follow(resolvConf: configuration.monitor.resolvConf)
        try metricsOutputs.configure(configuration.metrics)
    }

    /// Watches `watched`'s socket; what it reads goes to the watcher, whose engine it is by the time the loop next runs.
    private func watch(_ watched: PathEngine) throws -> EventLoop.Watch {
        try kernel.watch(watched) { [unowned self] in
            let overruns = engine.statistics.overruns
            watcher.readable()
            if engine.statistics.overruns != overruns { metricsOutputs.changed() }
        }
    }

    private func dnsChanged(_ servers: DNSServers?) {
        engine.dnsServers = servers
        log.info(
            "dns: \(servers?.source.rawValue ?? "not followed"): \(servers?.servers.map(\.address.description).joined(separator: " ") ?? "")"
        )
        if isReady { publishCurrentPath() }
    }

    // MARK: Publishing

    /// Evaluates the path and publishes it when it changed.
    func publishCurrentPath() { watcher.evaluateNow() }

    /// A path the watcher evaluated: published when it changed — properties,
    /// StatusChanged, STATUS=, and READY=1 the first time. Whether it leaves another way
    /// than the published one is decided here, once, for every component that acts on it:
    /// the probe, the captive-portal API, the names Route() and WatchPath() resolved.
    private func pathEvaluated(_ evaluated: Path) {
        var path = evaluated
        path.initial = false
        let before = current
        let moved = before.map { !$0.leavesTheSameWay(as: path) } ?? true
        connectivity.observe(path, moved: moved)
        capport.observe(path, moved: moved, engine: engine)
        nat64.observe(path)
        waysOut.observe(path) { engine.waysOut(excluding: $0) }
        let published = publish(path)
        if moved, before != nil { queries.resolveAgain() }
        queries.refresh()
        guard published else { return }
        trust.schedule.pathChanged(first: !isReady)
        isReady = true
    }

    /// Publishes `fresh`, judged, when the document differs from the current one. Every
    /// change of the document goes through here — a path, connectivity or trust change is
    /// one StatusChanged — so that what subscribers hold is always what `Describe()` answers.
    @discardableResult
    private func publish(_ fresh: Path) -> Bool {
        guard let path = judged(fresh, published: true).succeeding(current) else { return false }
        let before = current?.connectivity
        current = path
        object.publish(status: path.status.rawValue, document: path.jsonString()) { path.busProperties }
        compat?.publish(path)
        metrics.pathChanges += 1
        metricsOutputs.changed()
        let line = path.description
        // Changes of the available interfaces publish a document too; the log says when the status line moves.
        if line != lastLoggedLine { log.info("path: \(line)") } else { log.debug("path: \(line) (interfaces changed)") }
        lastLoggedLine = line
        if before != path.connectivity, path.status.isReachable {
            let details = connectivity.schedule.verdict.map { " (\($0.details.joined(separator: "; ")))" } ?? ""
            log.info("connectivity: \(path.connectivity.rawValue)\(path.portal.map { " at \($0)" } ?? "")\(details)")
        }
        if isReady { ServiceManager.status(line) } else { ServiceManager.ready(status: line) }
        return true
    }

    /// What the daemon says of a path beyond the kernel's view, decided here alone for the
    /// published path and every path `Route()` and `WatchPath()` answer (docs/api.md): the
    /// trust verdict, and connectivity (docs/connectivity.md). The published path's is the
    /// probe's, overruled by the network's captive-portal API when it says captive; a path
    /// that leaves as the published one does has the same; one that leaves by another way
    /// out has that way out's own verdict; an unusable path `none` (`unknown` if nobody
    /// knows); any other `unknown`. Each other way out in `interfaces` carries its own verdict.
    private func judged(_ evaluated: Path, published isPublished: Bool = false) -> Path {
        var path = evaluated
        path.source = .daemon
        path.trust = trust.summary
        if isPublished {
            (path.connectivity, path.portal) = connectivity.schedule.state(
                of: path, unprobed: ConnectivityScheduler.unprobed(path, validated: trust.validated))
            if path.status.isReachable {
                path.capport = capport.schedule.state
                // The network's own word is stronger than a probe's guess: captive is a portal at its
                // page; not captive leaves the probe to decide, so it never makes a failing path full.
                if let announced = path.capport, announced.captive == true {
                    (path.connectivity, path.portal) = (.portal, announced.userPortalURL)
                }
            }
        } else if let current, path.leavesTheSameWay(as: current) {
            (path.connectivity, path.portal) = (current.connectivity, current.portal)
        } else if !path.status.isReachable {
            (path.connectivity, path.portal) = (path.status == .unknown ? .unknown : .none, nil)
        } else {
            let wayOut = path.vpn == nil ? path.interface.flatMap { waysOut.verdict(of: $0.index) } : nil
            (path.connectivity, path.portal) = (wayOut ?? .unknown, nil)
        }
        for position in path.interfaces.indices where path.interfaces[position].index != path.interface?.index {
            path.interfaces[position].connectivity = waysOut.verdict(of: path.interfaces[position].index)
        }
        return path
    }

    /// Connectivity or trust may have changed without the path (a probe or the API answered,
    /// a round ended): publish the document. Entering or leaving a portal, or other evidence
    /// of one (the API now announces it, or contradicts the probe's redirect), re-judges trust.
    private func republish() {
        guard let path = current else { return }
        let couldUsePlainHTTP = plainHTTPReportsAllowed
        publish(path)
        let after = current ?? path
        queries.refresh()
        let (wasPortal, isPortal) = (path.connectivity == .portal, after.connectivity == .portal)
        trust.schedule.connectivityPublished(
            portalChanged: wasPortal != isPortal,
            evidenceChanged: wasPortal && isPortal && path.capport?.captive != after.capport?.captive,
            connectivity: after.connectivity.rawValue)
        // Logged in past a portal, or back to a clean path: what waited for that goes now.
        if !couldUsePlainHTTP && plainHTTPReportsAllowed { trust.schedule.requestDelivery("connectivity full") }
    }

    /// A delivery pass may run whenever there is a way out: each collector's own
    /// validation, and `ReportRoute` for plain-HTTP ones, decide what goes (docs/security.md).
    private var mayDeliverReports: Bool { current?.status.isReachable == true }

    private var plainHTTPReportsAllowed: Bool {
        ReportRoute(connectivity: current?.connectivity.rawValue, trust: trust.summary).allowsPlainHTTP && mayDeliverReports
    }

    // MARK: The object's methods (docs/api.md)

    /// The published document: every change of the trust verdict is published (`republish`).
    func describe() -> String { (current ?? Path.unknown()).jsonString() }

    func route(to destination: String, caller: String, reply: @escaping (Result<String, BusMethodError>) -> Void) {
        queries.route(to: destination, caller: caller, reply: reply)
    }

    func watchPath(
        destination: String, interfaceTypes: String, caller: String,
        reply: @escaping (Result<(key: String, document: String), BusMethodError>) -> Void
    ) {
        queries.watchPath(destination: destination, interfaceTypes: interfaceTypes, caller: caller, reply: reply)
    }

    func pathWatchKey(destination: String, interfaceTypes: String) throws(BusMethodError) -> String {
        try PathQueries.watchRequest(destination: destination, interfaceTypes: interfaceTypes).key
    }

    func interfaces() -> String { InterfaceChange.jsonArray(engine.inventory()) }

    func trustStatus() -> String { trust.status() }

    func recheckTrust(caller: uid_t?) throws(BusMethodError) { try trust.recheck(caller: caller) }

    func checkConnectivity(caller: uid_t?, reply: @escaping (Result<String, BusMethodError>) -> Void) {
        guard probeLimit.admit(caller) else {
            return reply(.failure(.limitsExceeded("CheckConnectivity is rate-limited to once per 10 s for each user")))
        }
        connectivity.checkNow(captivePortalAPI: capport.schedule.hasAPI, reply: reply)
        capport.schedule.queryNow()
        waysOut.forgetVerdicts()
    }

    func reload(reply: @escaping (Result<String, BusMethodError>) -> Void) {
        reloadConfiguration { result in reply(result.mapError { .failed("\($0)") }.map { "" }) }
    }

    // MARK: Reload

    /// Re-reads the config; a bad one is reported and the running one stays in force.
    /// The helper checks `[trust]` while the loop goes on; `done` runs once the new
    /// config is in force or was refused.
    func reloadConfiguration(_ done: @escaping (Result<Void, any Error>) -> Void = { _ in }) {
        guard !reloading else { return done(.failure(DaemonConfiguration.Failure(description: "a reload is already in progress"))) }
        ServiceManager.reloading()
        reloading = true
        DaemonConfiguration.startLoading(configFile, helper: helper, runs: helperRuns) { [unowned self] loaded in
            reloading = false
            let result = loaded.flatMap { fresh in Result { try apply(fresh) } }
            if case let .failure(error) = result { log.error("reload: \(error); the previous configuration stays in force") }
            ServiceManager.ready()
            done(result)
        }
    }

    /// Puts `fresh` in force in every component; throws, with nothing changed, when
    /// its engine, the watch on it or its metrics listener cannot start. Everything that
    /// can fail comes before the old engine is let go: the daemon hears the kernel
    /// through one engine or the other, never through none.
    private func apply(_ fresh: DaemonConfiguration) throws {
        let freshEngine = try kernel.openEngine(fresh.monitor)
        let freshWatch = try watch(freshEngine)
        try metricsOutputs.configure(fresh.metrics)
        engineWatch = freshWatch
        metrics.earlierEngines = metrics.earlierEngines + engine.statistics
        watcher.replace(freshEngine)
        freshEngine.alsoWatched = queries.addresses
        freshEngine.dnsServers = resolvers.servers
        freshEngine.discoveredNAT64 = engine.discoveredNAT64
        // What cannot follow the new config is logged; the rest of it is in force.
        do {
            try resolvers.follow(resolvConf: fresh.monitor.resolvConf)
        } catch {
            log.error("reload: \(error)")
        }
        do {
            try configureCompat(fresh)
        } catch {
            log.error("reload: \(error)")
        }
        let connectivityChanged = fresh.connectivity != configuration.connectivity
        trust.reconfigure(fresh.trust, connectivityChanged: connectivityChanged)
        if connectivityChanged {
            connectivity.reconfigure(fresh.connectivity)
            waysOut.reconfigure(fresh.connectivity)
            do {
                try capport.reconfigure(fresh.connectivity)
            } catch {
                log.error("reload: \(error)")
            }
        }
        configuration = fresh
        log.notice("reloaded \(configFile)")
        publishCurrentPath()
        trust.schedule.requestRound("reload")
    }

    // MARK: The bus

    /// The bus the daemon is on (nil: none): systemd-resolved's servers are followed
    /// there, and `[compat] networkmanager` is served there.
    func attach(bus: BusConnection?) throws {
        if let bus {
            try resolvers.followResolved(on: bus)
            try SleepFollower.follow(on: bus, sleeping: { [log] in log.notice("going to sleep") }, resumed: { [unowned self] in resumed() })
            compat = try NetworkManagerCompat(connection: bus, loop: loop, log: { [log] in log.notice($0) }) {
                [unowned self] caller, done in
                checkConnectivity(caller: caller) { _ in done() }
            }
        }
        try configureCompat(configuration)
    }

    private func configureCompat(_ configuration: DaemonConfiguration) throws {
        guard let compat else {
            if configuration.networkManagerCompat {
                log.warning(
                    "compat: networkmanager = true, but reachd is on no bus (--bus none, or no system bus): nothing serves the surface")
            }
            return
        }
        try compat.configure(enabled: configuration.networkManagerCompat, path: current)
    }

    // MARK: Sleep

    /// The host woke up: what was found before it slept may belong to another network.
    /// Links and addresses are read again, connectivity and the captive-portal API's
    /// answer, every way out's and the trust verdict are forgotten and asked again
    /// (`unknown` meanwhile, never the old verdict), and the DNS64 is asked again.
    private func resumed() {
        log.notice("resumed from sleep: reading links and addresses again, probing, asking the captive-portal API, re-validating pins")
        connectivity.schedule.forgetVerdict()
        capport.schedule.forgetAnswer()
        waysOut.forgetVerdicts()
        trust.resumed()
        nat64.askAgain()
        watcher.rereadState()
        republish()
    }

    /// What a scrape reads (and what tests read of the daemon's counts).
    func metricsFamilies() -> [MetricFamily] {
        metrics.families(
            DaemonMetrics.State(
                status: current?.status ?? .unknown, connectivity: current?.connectivity ?? .unknown,
                trust: trust.summary, round: trust.schedule.isEnabled ? trust.round : nil,
                engine: engine.statistics, reportsPending: trust.schedule.reportsPending,
                dns: current?.dns, ipv4Via: current?.ipv4Via ?? .none, nat64: current?.nat64,
                interfaces: current?.interfaces ?? [], capport: current?.capport, capportQueries: capport.schedule.counts))
    }
}
