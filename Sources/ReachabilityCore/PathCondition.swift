/// What a path must be for a waiter to go on: `reachctl wait --for`'s words,
/// and ``ReachabilityMonitor``'s and `ReachabilityClient`'s `wait(until:timeout:)`.
public enum PathCondition: String, Sendable, CaseIterable {
    /// Any of wifi, wired, cellular.
    case reachable
    /// Reachable, and connectivity `full`: the probe (or a validated trust host)
    /// saw the Internet, not a captive portal.
    case online
    /// The path leaves by Wi-Fi, a wired link, or a modem.
    case wifi, wired, cellular
    /// No usable path.
    case unreachable

    /// Whether `path` meets the condition.
    public func isMet(by path: Path) -> Bool {
        switch self {
        case .reachable: path.status.isReachable
        case .online: path.status.isReachable && path.connectivity == .full
        default: path.status.rawValue == rawValue
        }
    }

    /// The first path of `paths` that meets the condition — at once if the current
    /// one does — or nil when `timeout` passes first, `paths` ends, or the task is cancelled.
    public func firstPath(in paths: AsyncStream<Path>, timeout: Duration) async -> Path? {
        await withTaskGroup(of: Path?.self) { group in
            group.addTask {
                for await path in paths where isMet(by: path) { return path }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
