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
    /// Pin-failure reports waiting in the outbox for their collectors.
    public var reportsPending: Int

    public init(recheck: String, interval: Int64, hosts: Int, reportsPending: Int) {
        self.recheck = recheck
        self.interval = interval
        self.hosts = hosts
        self.reportsPending = reportsPending
    }

    /// No `[trust]` table.
    public static let none = TrustConfigurationSummary(recheck: "on-change", interval: 6 * 3600, hosts: 0, reportsPending: 0)
}

/// `reachd-trust check FILE [STATUS [INTERFACE [CONNECTIVITY]]]`: one round's outcome.
public struct TrustRound: Codable, Sendable {
    /// none, unknown, ok, degraded, portal or compromised.
    public var overall: String
    /// The per-host results of the TrustStatus document: a JSON array, as text.
    public var hosts: String
    /// New pin-failure reports (already spooled), each as a JSON string.
    public var reports: [String]
    /// For the daemon's log: missing roots, undeliverable reports, pins without a backup.
    public var warnings: [String]
    /// Reports still waiting for their collectors after this round's delivery.
    public var reportsPending: Int
    /// What the daemon's metrics need of each host, typed (in the order of `hosts`).
    public var summaries: [TrustHostSummary]

    public init(overall: String, hosts: String, reports: [String], warnings: [String], reportsPending: Int,
                summaries: [TrustHostSummary]) {
        self.overall = overall
        self.hosts = hosts
        self.reports = reports
        self.warnings = warnings
        self.reportsPending = reportsPending
        self.summaries = summaries
    }
}

/// One host's outcome in a round, as the daemon counts it.
public struct TrustHostSummary: Codable, Sendable, Equatable {
    public var host: String
    /// One of `verdicts`.
    public var verdict: String
    /// A pinned host whose pins are enforced failed validation (what a pin-failure report is written for).
    public var pinFailure: Bool
    /// The earliest notAfter of the validated chain (seconds since 1970), when a chain validated.
    public var certificateExpires: Int64?

    public init(host: String, verdict: String, pinFailure: Bool, certificateExpires: Int64?) {
        self.host = host
        self.verdict = verdict
        self.pinFailure = pinFailure
        self.certificateExpires = certificateExpires
    }

    /// Every per-host verdict (ServerTrust's `TrustVerdict`, which the daemon does not link; a test keeps them equal).
    public static let verdicts = ["trusted", "pin-mismatch", "chain-invalid", "host-mismatch", "expired", "revoked",
                                  "tls-policy", "pins-expired", "unreachable", "portal"]
    /// The verdicts that say a chain validated (for connectivity: the host was reached, unaltered).
    public static let validatedVerdicts: Set<String> = ["trusted", "pins-expired"]
}

/// `reachd-trust deliver FILE`: one delivery pass over the report outbox.
public struct TrustDelivery: Codable, Sendable, Equatable {
    /// Reports every collector now has.
    public var delivered: Int
    /// Reports dropped undelivered (older than 7 days, unreadable).
    public var dropped: Int
    /// Reports still waiting.
    public var reportsPending: Int
    /// For the daemon's log: which collector failed, and why.
    public var warnings: [String]

    public init(delivered: Int, dropped: Int, reportsPending: Int, warnings: [String]) {
        self.delivered = delivered
        self.dropped = dropped
        self.reportsPending = reportsPending
        self.warnings = warnings
    }
}

/// What the daemon's log says of a pin-failure report (the report itself holds PEM chains).
public struct PinFailureReportHead: Decodable, Sendable {
    public var hostname: String
    public var validationResult: String

    enum CodingKeys: String, CodingKey { case hostname, validationResult = "validation-result" }
}
