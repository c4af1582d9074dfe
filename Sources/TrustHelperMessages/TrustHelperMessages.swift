// What reachd-trust answers reachd: one JSON line per request. The two are
// separate processes (the daemon links no TLS code), so the format is defined
// once, here, and encoded by one side and decoded by the other.

import ReachabilityCore

/// `reachd-trust check-config FILE`: what the daemon needs of `[trust]`.
public struct TrustConfigurationSummary: Codable, Equatable, Sendable {
    /// on-change, interval or both.
    public var recheck: String
    /// Seconds between interval rounds.
    public var interval: Int64
    /// Pin-failure reports waiting in the outbox for their collectors.
    public var reportsPending: Int
    /// How many hosts are dialled.
    public var hosts: Int { probed.count }
    /// The hosts dialled, in order: what a round cut short reports as not judged.
    public var probed: [ProbedHost]
    /// `[trust] timeout`, in milliseconds: each connect, handshake or POST.
    public var timeoutMilliseconds: Int64
    /// The distinct `report-uri`s of the hosts.
    public var collectors: Int

    /// A host a round dials.
    public struct ProbedHost: Codable, Equatable, Sendable {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    public init(recheck: String, interval: Int64, probed: [ProbedHost], reportsPending: Int, timeoutMilliseconds: Int64, collectors: Int) {
        self.recheck = recheck
        self.interval = interval
        self.probed = probed
        self.reportsPending = reportsPending
        self.timeoutMilliseconds = timeoutMilliseconds
        self.collectors = collectors
    }

    /// What starting reachd-trust and reading the system's roots may take, beyond the network's part.
    public static let budgetMargin = Duration.seconds(10)
    /// POSTs reachd-trust sends at once (its outbox's concurrency).
    public static let deliveryConcurrency = 8

    /// How long a delivery pass of `reports` waiting reports may take before it is
    /// killed: every report to every collector, a few at a time, each within the timeout.
    public func deliveryBudget(reports: Int) -> Duration {
        let posts = max(1, reports * max(1, collectors))
        return .milliseconds(timeoutMilliseconds) * ((posts + Self.deliveryConcurrency - 1) / Self.deliveryConcurrency) + Self.budgetMargin
    }

    /// How long a round may take before it is killed: every host's every phase
    /// (two handshakes and an OCSP query) one after the other, then a delivery pass
    /// of what waits and what the round may add. Hosts are checked at once, so a
    /// round that lasts this long is stuck (a stopped helper, a server trickling
    /// bytes past every timeout, a bug), not slow.
    public func roundBudget(reportsPending: Int) -> Duration {
        .milliseconds(timeoutMilliseconds) * (3 * hosts) + deliveryBudget(reports: reportsPending + hosts)
    }

    /// No `[trust]` table.
    public static let none = TrustConfigurationSummary(
        recheck: "on-change", interval: 6 * 3600, probed: [], reportsPending: 0,
        timeoutMilliseconds: 5000, collectors: 0)
}

/// `reachd-trust check FILE [STATUS [INTERFACE [CONNECTIVITY [EVIDENCE …]]]]`: one round's outcome.
public struct TrustRound: Codable, Sendable {
    /// The round's overall verdict.
    public var overall: TrustSummary
    /// Every configured host's verdict, in the config's order: the TrustStatus document's `hosts`.
    public var hosts: [TrustStatus.Host]
    /// New pin-failure reports (already spooled), each as a JSON string: signalled as they are (`PinFailure`).
    public var reports: [String]
    /// For the daemon's log: missing roots, undeliverable reports, pins without a backup.
    public var warnings: [String]
    /// Reports still waiting for their collectors after this round's delivery.
    public var reportsPending: Int
    /// The hosts whose enforced pins failed validation (what a pin-failure report is written for):
    /// counted by the daemon's metrics, which cannot tell a pinned host from `hosts`.
    public var pinFailures: [String]
    /// The same failures, seen while connectivity was `portal`: counted apart, not an alarm
    /// (the verdict is `portal`).
    public var pinFailuresBehindPortal: [String]
    /// Reports evicted to keep the spool and the outbox within their capacity.
    public var evicted: [String]
    /// Reports lost or unaccounted for (not built, not written, the outbox unreadable): in `warnings` too.
    public var reportFailures: Int

    public init(
        overall: TrustSummary, hosts: [TrustStatus.Host], reports: [String], warnings: [String], reportsPending: Int,
        pinFailures: [String] = [], pinFailuresBehindPortal: [String] = [], evicted: [String], reportFailures: Int = 0
    ) {
        self.overall = overall
        self.hosts = hosts
        self.reports = reports
        self.warnings = warnings
        self.reportsPending = reportsPending
        self.pinFailures = pinFailures
        self.pinFailuresBehindPortal = pinFailuresBehindPortal
        self.evicted = evicted
        self.reportFailures = reportFailures
    }
}

/// `reachd-trust deliver FILE`: one delivery pass over the report outbox.
public struct TrustDelivery: Codable, Sendable, Equatable {
    /// Reports every collector now has.
    public var delivered: Int
    /// Reports dropped undelivered (past their attempts and 7 days, unreadable).
    public var dropped: Int
    /// Reports still waiting.
    public var reportsPending: Int
    /// For the daemon's log: which collector failed, and why.
    public var warnings: [String]
    /// Reports lost or unaccounted for (set aside unreadable, an entry not updated, the outbox unreadable).
    public var reportFailures: Int

    public init(delivered: Int, dropped: Int, reportsPending: Int, warnings: [String], reportFailures: Int = 0) {
        self.delivered = delivered
        self.dropped = dropped
        self.reportsPending = reportsPending
        self.warnings = warnings
        self.reportFailures = reportFailures
    }
}

/// What the daemon's log says of a pin-failure report (the report itself holds PEM chains).
public struct PinFailureReportHead: Decodable, Sendable {
    public var hostname: String
    public var validationResult: TrustVerdict
    /// Present when the failure was seen behind a captive portal.
    public var captivePortal: CaptivePortalEvidence?

    enum CodingKeys: String, CodingKey { case hostname, validationResult = "validation-result", captivePortal = "captive-portal" }
}

/// `reachd-trust capport URI INTERFACE-INDEX TIMEOUT-MS [ANCHOR …]`: what the API answered.
public struct CaptivePortalAPIAnswer: Codable, Equatable, Sendable {
    /// The document, when the API answered one that parses.
    public var document: CaptivePortalAPIDocument?
    /// Why there is none: the connection, TLS, an HTTP error, or what was wrong with the document.
    public var failure: String?
    /// The API answered, but what it answered is not an RFC 8908 document.
    public var invalid: Bool

    public init(document: CaptivePortalAPIDocument) {
        self.document = document
        failure = nil
        invalid = false
    }

    public init(failure: String, invalid: Bool) {
        document = nil
        self.failure = failure
        self.invalid = invalid
    }
}
