import FoundationEssentials
import NIOSSL

/// What a check found for one host.
public struct HostTrustResult: Sendable, Equatable {
    /// The host name checked (the pattern of an exact entry, or the name asked for).
    public var host: String
    /// The TLS port checked.
    public var port: Int
    /// The configured pattern whose policy applied (for an unconfigured host, the host).
    public var pattern: String
    /// What the check found.
    public var verdict: TrustVerdict
    /// Why, in words a user can act on.
    public var reason: String
    /// false for a report-only pin set: its mismatch is reported, not a failure.
    public var enforced: Bool
    /// The negotiated protocol, when a handshake completed.
    public var tlsVersion: TLSVersion?
    /// The pins of the chain the server presented, leaf first.
    public var presentedPins: [PublicKeyPin]
    /// Something to fix before it bites: every pin is a key of the current
    /// chain, so rotating that key would fail every client.
    public var warning: String?
    /// When the check ran.
    public var checkedAt: Date
    /// The earliest notAfter of the chain that validated (nil when none did): when this host breaks next.
    public var certificateExpires: Date? = nil

    /// Whether a client may go on: trusted, pins expired (not enforced any
    /// more), or a report-only pin mismatch.
    public var allowsConnection: Bool {
        switch verdict {
        case .trusted, .pinsExpired: true
        case .pinMismatch: !enforced
        default: false
        }
    }

    /// How this result counts towards the overall verdict.
    var standing: TrustSummary {
        switch verdict {
        case .trusted: .ok
        case .unreachable, .pinsExpired, .clockUnsynchronized: .degraded
        case .pinMismatch where !enforced: .degraded
        case .portal: .portal
        case .unknown: .unknown
        default: .compromised
        }
    }
}

/// A round's overall verdict, summed up from its hosts' results.
extension TrustSummary {
    /// The overall verdict of one round's results: the worst host's standing,
    /// `unknown` when every host was unreachable, `none` without hosts.
    public init(_ results: [HostTrustResult]) {
        if results.isEmpty {
            self = .none
        } else if results.allSatisfy({ $0.verdict == .unreachable }) {
            self = .unknown
        } else {
            self = results.map(\.standing).max()!
        }
    }
}
