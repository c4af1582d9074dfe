import DaemonCore
import ReachabilityBus
import ReachabilityCore
import TrustHelperMessages

/// The daemon's side of RFC 8910/8908 (docs/connectivity.md): which API the
/// path's interface has — a router's advertisement, networkd's link state or the
/// config, in that order — and its queries, run in reachd-trust on the schedule of
/// `CaptivePortalAPIScheduler`. Lives on the loop thread.
final class CaptivePortalChecker {
    let schedule: CaptivePortalAPIScheduler
    private let networkd: NetworkdCaptivePortal
    private var options: ConnectivityOptions
    private var path: Path?

    /// - Parameters:
    ///   - start: runs one query (reachd-trust); false when it could not start.
    ///   - changed: the published state changed without a new path (networkd rewrote its file).
    init(options: ConnectivityOptions, loop: EventLoop, changed: @escaping () -> Void,
         start: @escaping (CaptivePortalAPIScheduler.Target, Int) -> Bool) throws {
        self.options = options
        var timer: EventLoop.Timer?
        schedule = CaptivePortalAPIScheduler(interval: options.interval, timer: .init(arm: { timer?.arm(after: $0) }, disarm: { timer?.disarm() }),
                                             start: start)
        timer = try loop.timer { [unowned schedule] in schedule.timerFired() }
        networkd = NetworkdCaptivePortal(loop: loop, onChange: changed)
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
    /// the path leaves another way under the same API.
    func observe(_ fresh: Path, engine: PathEngine) {
        let moved = path.map { !$0.leavesTheSameWay(as: fresh) } ?? true
        path = fresh
        let target = target(of: fresh, engine: engine)
        if target != schedule.target {
            if let target {
                let api = "\(target.uri) (\(target.source.rawValue), \(target.interfaceName))"
                if let refusal = target.refusal { Log.warning("capport: \(api): \(refusal)") } else { Log.info("capport: querying \(api)") }
            } else if let before = schedule.target {
                Log.info("capport: \(before.uri) no longer applies (the network no longer announces it, or the path left \(before.interfaceName))")
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
            if let announced = engine.announcedCaptivePortal(on: index) { (announced.uri, .routerAdvertisement) }
            else if let recorded = networkd.uri { (recorded, .networkd) }
            else if case let .uri(configured) = options.capport { (configured, .config) }
            else { nil }
        return found.map { .init(uri: $0.0, source: $0.1, interfaceIndex: index, interfaceName: interface.name) }
    }

    /// The config's extra roots for the API, as reachd-trust takes them.
    var anchors: [String] { options.capportAnchors }
    /// Each query's limit: the probe's.
    var timeout: Duration { options.timeout }
}
