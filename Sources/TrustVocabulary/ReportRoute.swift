/// Which collectors a waiting pin-failure report may go to over the current path
/// (docs/security.md, "A report reaches its collector whenever its collector is genuine").
///
/// A report exists for the network that intercepts a pinned host, so it cannot
/// wait for that network to stop. What keeps an interceptor from swallowing it is
/// the collector's own validation: an https collector is judged as any host (the
/// system's roots; its entry's pins and `connect` address), and a report leaves the
/// outbox only on its 2xx. So https collectors are tried over any path. A plain-HTTP
/// collector (`allow-http-report-uri`) has no validation: anyone on the path could
/// answer 2xx for it, so it is tried only over a path that reaches the Internet
/// unaltered — connectivity `full`, and the last verdict neither `compromised` nor `portal`.
public struct ReportRoute: Equatable, Sendable {
    /// Plain-HTTP collectors may be tried too.
    public let allowsPlainHTTP: Bool

    /// Over a path whose connectivity is `connectivity` (`PathDocument`'s value; nil:
    /// the caller has no probe and vouches for the path) and whose last trust verdict is `trust`.
    public init(connectivity: String?, trust: TrustSummary) {
        allowsPlainHTTP = (connectivity ?? "full") == "full" && trust != .compromised && trust != .portal
    }

    /// Whether a report may be POSTed to `collector` (a `report-uri`) now.
    public func allows(_ collector: String) -> Bool {
        allowsPlainHTTP || !collector.lowercased().hasPrefix("http:")
    }
}
