// What reachd-trust answers reachd: one JSON line per request. The two are
// separate processes (the daemon links no TLS code), so the format is defined
// once, here, and encoded by one side and decoded by the other.

/// `reachd-trust check-config FILE`: what the daemon needs of `[trust]`.
public struct TrustConfigurationSummary: Codable, Equatable, Sendable {
    /// on-change, interval or both.
    public var recheck: String
    /// Seconds between interval rounds.
    public var interval: Int64
    /// How many hosts are dialled.
    public var hosts: Int

    public init(recheck: String, interval: Int64, hosts: Int) {
        self.recheck = recheck
        self.interval = interval
        self.hosts = hosts
    }

    /// No `[trust]` table.
    public static let none = TrustConfigurationSummary(recheck: "on-change", interval: 6 * 3600, hosts: 0)
}

/// `reachd-trust check FILE [STATUS [INTERFACE]]`: one round's outcome.
public struct TrustRound: Codable, Sendable {
    /// none, unknown, ok, degraded or compromised.
    public var overall: String
    /// The TrustStatus document, as a string.
    public var status: String
    /// New pin-failure reports (already spooled), each as a JSON string.
    public var reports: [String]
    /// For the daemon's log: missing roots, undeliverable reports, pins without a backup.
    public var warnings: [String]

    public init(overall: String, status: String, reports: [String], warnings: [String]) {
        self.overall = overall
        self.status = status
        self.reports = reports
        self.warnings = warnings
    }
}
