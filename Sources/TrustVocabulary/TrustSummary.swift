/// The trust checker's overall verdict over every configured host (docs/trust.md):
/// the path document's `trust`, TrustChanged's first argument, a round's outcome.
public enum TrustSummary: String, Codable, Sendable, CaseIterable, Comparable {
    /// No hosts are configured.
    case none
    /// Hosts are configured but no round has finished yet, or no host could be reached.
    case unknown
    /// Every host passed its checks.
    case ok
    /// Some host was unreachable, its pins expired, or a report-only pin mismatched.
    case degraded
    /// An enforced pin, chain, name, revocation or TLS-policy failure.
    case compromised
    /// Handshakes failed while connectivity is `portal`: a captive portal intercepts TLS, not an attack.
    case portal

    /// How bad: of several hosts' standings, the round's is the worst.
    private var severity: Int {
        switch self {
        case .none: 0
        case .unknown: 1
        case .ok: 2
        case .degraded: 3
        case .portal: 4
        case .compromised: 5
        }
    }

    public static func < (lhs: TrustSummary, rhs: TrustSummary) -> Bool { lhs.severity < rhs.severity }
}
