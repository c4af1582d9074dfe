import ReachabilityClient

/// Where a ReachabilityCompat type's answers come from (reachd's own addition to the APIs it copies).
public enum ReachabilityBackend: Sendable, Equatable {
    /// The reachd daemon answered.
    case daemon
    /// No daemon answered: a monitor in this process, on netlink.
    case inProcess
}

/// The one place that decides where a compat type's paths come from: the daemon at
/// `endpoint` when one answers, else an in-process monitor with `options`.
struct PathFeed {
    let paths: AsyncStream<Path>
    let backend: ReachabilityBackend
    /// Ends the subscription (stops the in-process monitor).
    let stop: @Sendable () -> Void

    /// Subscribes to `host`'s path (nil: the default path) leaving by `interfaceTypes`;
    /// nil when neither a daemon answers nor netlink can be opened.
    static func open(
        host: String?, interfaceTypes: Set<InterfaceType>, options: MonitorOptions,
        endpoint: ReachabilityClient.Endpoint?
    ) -> PathFeed? {
        let everyType = interfaceTypes == Set(InterfaceType.allCases)
        if let endpoint {
            let client = ReachabilityClient(endpoint: endpoint)
            if (try? client.blocking.currentPath()) != nil {
                let paths = host == nil && everyType ? client.paths : client.paths(to: host, interfaceTypes: interfaceTypes)
                return PathFeed(paths: paths, backend: .daemon, stop: {})
            }
        }
        let target = host.map { ReachabilityMonitor.Target.host($0) } ?? .defaultPath
        let monitor = ReachabilityMonitor(options: options, target: target, allowedInterfaceTypes: interfaceTypes)
        let paths = monitor.paths
        guard (try? monitor.start()) != nil else { return nil }
        return PathFeed(paths: paths, backend: .inProcess, stop: { monitor.stop() })
    }
}
