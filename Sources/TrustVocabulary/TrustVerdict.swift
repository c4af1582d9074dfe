/// A host's verdict (docs/trust.md). A network failure is never a trust failure.
///
/// Read from a newer daemon or report, a verdict this library does not know
/// decodes as ``unknown``: its `reason` still says what happened.
public enum TrustVerdict: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// The chain validated, the name matched and a pin matched (when pins are set).
    case trusted
    /// The chain validated, but no key in it matches a configured pin.
    case pinMismatch = "pin-mismatch"
    /// The chain does not lead to a trust anchor, or breaks a policy on the way.
    case chainInvalid = "chain-invalid"
    /// The leaf certificate does not name the host.
    case hostMismatch = "host-mismatch"
    /// A certificate of the chain is outside its validity period.
    case expired
    /// A certificate of the chain is revoked (OCSP).
    case revoked
    /// The handshake broke the host's TLS policy (protocol version, key exchange, key size).
    case tlsPolicy = "tls-policy"
    /// The pin set is past its `expires` date: the chain alone was judged, and that is said.
    case pinsExpired = "pins-expired"
    /// No TLS handshake completed: no route, refused, or timed out.
    case unreachable
    /// The handshake failed validation while connectivity is `portal`: a captive
    /// portal intercepting TLS, or an interceptor posing as one. Neither `trusted`
    /// nor an alarm; a pinned host's failure is still reported, marked as seen
    /// behind a captive portal (docs/security.md).
    case portal
    /// A certificate looked outside its validity period while the clock is not
    /// synchronised yet (ServerTrust's `ClockSource`): the clock is the suspect, not the server.
    /// Not reported; judged again once the clock is synchronised.
    case clockUnsynchronized = "clock-unsynchronized"
    /// Not judged: the round was killed at its deadline (the reason says so), or the
    /// verdict is newer than this library.
    case unknown

    /// The failures an interception causes — what a pinned host's report is written
    /// for; judged `portal` while connectivity is `portal` (and still reported), as
    /// themselves otherwise.
    public var isInterception: Bool {
        switch self {
        case .pinMismatch, .chainInvalid, .hostMismatch, .expired, .revoked, .tlsPolicy: true
        case .trusted, .pinsExpired, .unreachable, .portal, .clockUnsynchronized, .unknown: false
        }
    }

    /// Whether a chain validated: the host was reached, unaltered (evidence of connectivity).
    public var isValidated: Bool { self == .trusted || self == .pinsExpired }

    /// The word documents and tools print: `pin-mismatch`, `trusted`, …
    public var description: String { rawValue }

    /// Reads a verdict; one this library does not know is ``unknown``.
    public init(from decoder: any Decoder) throws {
        self = TrustVerdict(rawValue: try decoder.singleValueContainer().decode(String.self)) ?? .unknown
    }
}
