import DaemonDecisions
import ReachabilityCore
import SDBus
import TrustHelperMessages

/// The daemon's side of RFC 8910/8908 (docs/connectivity.md): which API the
/// path's interface has — a router's advertisement, networkd's link state or the
/// config, in that order — and its queries, run in reachd-trust on the schedule of
/// `CaptivePortalAPIScheduler`. Lives on the loop thread.
final class CaptivePortalChecker {
    /// What the rest of the daemon learns of the API.
    struct Hooks {
        /// The published state may have changed: networkd rewrote its file, or an answer was taken.
        var changed: () -> Void
        /// No query runs any more (answered, failed or not started): `CheckConnectivity()` callers may be answered.
        var settled: () -> Void
    }

    private(set) var schedule: CaptivePortalAPIScheduler!
    private var networkd: NetworkdCaptivePortal!
    private var options: ConnectivityOptions
    private let helper: TrustHelper?
    private let runs: HelperRuns
    private let hooks: Hooks
    private let log: Log

    init(options: ConnectivityOptions, helper: TrustHelper?, runs: HelperRuns, loop: EventLoop, log: Log, hooks: Hooks) throws {
        (self.options, self.helper, self.runs, self.log, self.hooks) = (options, helper, runs, log, hooks)
        var timer: EventLoop.Timer?
        schedule = CaptivePortalAPIScheduler(
            interval: options.interval, timer: .init(arm: { timer?.arm(after: $0) }, disarm: { timer?.disarm() }),
            start: { [unowned self] target, generation in start(target, generation: generation) })
        timer = try loop.timer { [unowned schedule] in schedule!.timerFired() }
        networkd = NetworkdCaptivePortal(loop: loop, onChange: hooks.changed)
        try networkd.configure(directory: options.capport == .off ? nil : options.networkdLinks)
    }

    /// A reload: the setting, the anchors, the interval or networkd's directory changed.
    func reconfigure(_ fresh: ConnectivityOptions) throws {
        options = fresh
        schedule.reconfigure(interval: fresh.interval)
        // Other anchors, another URI: the next evaluation selects the API afresh and asks it.
        schedule.select(nil)
        try networkd.configure(directory: fresh.capport == .off ? nil : fresh.networkdLinks)
    }

    /// The API of a freshly evaluated path: queried at once when it is new, again when
    /// the path `moved` (left another way, as the daemon decided) under the same API.
    func observe(_ fresh: Path, moved: Bool, engine: PathEngine) {
        let target = target(of: fresh, engine: engine)
        if target != schedule.target {
            if let target {
                let api = "\(target.uri) (\(target.source.rawValue), \(target.interfaceName))"
                if let refusal = target.refusal { log.warning("capport: \(api): \(refusal)") } else { log.info("capport: querying \(api)") }
            } else if let before = schedule.target {
                log.info(
                    "capport: \(before.uri) no longer applies (the network no longer announces it, or the path left \(before.interfaceName))"
                )
            }
            schedule.select(target)
        } else if moved {
            schedule.pathMoved()
        }
    }

    private func target(of path: Path, engine: PathEngine) -> CaptivePortalAPIScheduler.Target? {
        guard options.capport != .off, path.status.isReachable, let interface = path.interface else {
            networkd.follow(nil)
            return nil
        }
        let index = Int32(interface.index)
        networkd.follow(index)
        let found: (String, Path.CaptivePortal.Source)? =
            if let announced = engine.announcedCaptivePortal(on: index) {
                (announced.uri, .routerAdvertisement)
            } else if let recorded = networkd.uri { (recorded, .networkd) } else if case let .uri(configured) = options.capport {
                (configured, .config)
            } else { nil }
        return found.map { .init(uri: $0.0, source: $0.1, interfaceIndex: index, interfaceName: interface.name) }
    }

    /// Starts one API query in reachd-trust (reachd links no TLS); false when it cannot run.
    private func start(_ target: CaptivePortalAPIScheduler.Target, generation: Int) -> Bool {
        guard let helper else {
            log.warning("capport: \(target.uri) is not queried: reachd-trust is not installed")
            hooks.settled()
            return false
        }
        do {
            try helper.startCaptivePortalQuery(
                target.uri, interfaceIndex: target.interfaceIndex, timeout: options.timeout,
                anchors: options.capportAnchors, runs: runs
            ) { [unowned self] answer in
                finish(generation, answer)
            }
            return true
        } catch {
            log.error("capport: \(error)")
            hooks.settled()
            return false
        }
    }

    private func finish(_ generation: Int, _ answer: CaptivePortalAPIAnswer) {
        // CheckConnectivity() callers are answered once no query of the API runs, whatever this one said.
        defer { if !schedule.isRunning { hooks.settled() } }
        let before = schedule.state
        guard schedule.finish(generation, answer), let state = schedule.state else { return }
        let api = "\(state.api) (\(state.source.rawValue), \(state.interface))"
        if let error = state.error {
            if error != before?.error { log.warning("capport: \(api): \(error)") }
        } else if state.captive != before?.captive || state.expires != before?.expires {
            let session = state.secondsRemaining().map { ", the session ends in \($0) s" } ?? ""
            log.notice(
                "capport: \(api) says \(state.captive == true ? "captive, log in at \(state.userPortalURL ?? "")" : "not captive")\(session)"
            )
        }
        hooks.changed()
    }
}
