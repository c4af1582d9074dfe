/// A host's verdict (CONTRACT.md). A network failure is never a trust failure.
public enum TrustVerdict: String, Sendable, Codable, CaseIterable {
    case trusted
    case pinMismatch = "pin-mismatch"
    case chainInvalid = "chain-invalid"
    case hostMismatch = "host-mismatch"
    case expired
    case revoked
    case tlsPolicy = "tls-policy"
    case pinsExpired = "pins-expired"
    case unreachable
    /// The handshake failed validation while connectivity is `portal`: a captive
    /// portal intercepting TLS, not an attack — no report, no PinFailure.
    case portal

    /// The failures an interception causes — what a pinned host's report is written
    /// for; judged `portal` while connectivity is `portal`, as themselves otherwise.
    public var isInterception: Bool {
        switch self {
        case .pinMismatch, .chainInvalid, .hostMismatch, .expired, .revoked, .tlsPolicy: true
        case .trusted, .pinsExpired, .unreachable, .portal: false
        }
    }
}

/// A verdict with the reason behind it, in words a user can act on.
public struct TrustEvaluation: Sendable, Equatable, CustomStringConvertible {
    public var verdict: TrustVerdict
    public var reason: String

    public init(_ verdict: TrustVerdict, _ reason: String) {
        self.verdict = verdict
        self.reason = reason
    }

    public var description: String { "\(verdict.rawValue): \(reason)" }
}
