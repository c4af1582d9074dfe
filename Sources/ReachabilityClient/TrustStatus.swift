import FoundationEssentials

/// The daemon's latest trust round (`TrustStatus()`, `reachctl trust status --json`), typed.
public struct TrustStatus: Decodable, Sendable, Equatable {
    /// The overall verdict: the path document's `trust`.
    public var overall: TrustSummary
    /// Every configured host, in the config's order (empty before the first round).
    public var hosts: [Host]
    /// Pin-failure reports waiting for their collectors.
    public var reportsPending: Int

    /// One host's verdict.
    public struct Host: Decodable, Sendable, Equatable {
        /// The host name checked (the config's `host`).
        public var host: String
        /// The TCP port of its TLS service.
        public var port: Int
        /// The configured pattern whose policy applied.
        public var pattern: String
        /// What the check found: `trusted`, or why not.
        public var verdict: Verdict
        /// Why, in words a user can act on.
        public var reason: String
        /// false for a report-only pin set: its mismatch is reported, not a failure.
        public var enforced: Bool
        /// "TLSv1.3", when a handshake completed.
        public var tlsVersion: String?
        /// `sha256/…` of the presented chain's keys, leaf first.
        public var presentedPins: [String]
        /// Something to fix before it bites (every pin a key of the current chain).
        public var warning: String?
        /// When this host was last checked.
        public var checkedAt: Date
        /// The earliest notAfter of the validated chain, when one validated.
        public var certificateExpires: Date?

        enum CodingKeys: String, CodingKey {
            case host, port, pattern, verdict, reason, enforced, tlsVersion = "tls-version", presentedPins = "presented-pins", warning,
                 checkedAt = "checked-at", certificateExpires = "certificate-expires"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            host = try container.decode(String.self, forKey: .host)
            port = try container.decode(Int.self, forKey: .port)
            pattern = try container.decode(String.self, forKey: .pattern)
            verdict = Verdict(rawValue: try container.decode(String.self, forKey: .verdict))
            reason = try container.decode(String.self, forKey: .reason)
            enforced = try container.decode(Bool.self, forKey: .enforced)
            tlsVersion = try container.decodeIfPresent(String.self, forKey: .tlsVersion)
            presentedPins = try container.decodeIfPresent([String].self, forKey: .presentedPins) ?? []
            warning = try container.decodeIfPresent(String.self, forKey: .warning)
            checkedAt = try Self.date(try container.decode(String.self, forKey: .checkedAt), .checkedAt, container)
            certificateExpires = try container.decodeIfPresent(String.self, forKey: .certificateExpires)
                .map { try Self.date($0, .certificateExpires, container) }
        }

        private static func date(_ text: String, _ key: CodingKeys, _ container: KeyedDecodingContainer<CodingKeys>) throws -> Date {
            guard let date = try? Date(text, strategy: .iso8601) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not ISO 8601: \(text)")
            }
            return date
        }
    }

    /// A host's verdict (docs/trust.md). A struct rather than an enum: a newer
    /// daemon's verdict still decodes, and compares unequal to every known one.
    public struct Verdict: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The chain validated, the name matched and a pin matched (when pins are set).
        public static let trusted = Verdict(rawValue: "trusted")
        /// The chain validated, but no key in it matches a configured pin.
        public static let pinMismatch = Verdict(rawValue: "pin-mismatch")
        /// The chain does not lead to a configured or system trust anchor, or breaks a policy on the way.
        public static let chainInvalid = Verdict(rawValue: "chain-invalid")
        /// The leaf certificate does not name the host.
        public static let hostMismatch = Verdict(rawValue: "host-mismatch")
        /// A certificate of the chain is outside its validity period.
        public static let expired = Verdict(rawValue: "expired")
        /// A certificate of the chain is revoked (OCSP, when the host's policy asks for it).
        public static let revoked = Verdict(rawValue: "revoked")
        /// The handshake broke the host's TLS policy (protocol version, cipher).
        public static let tlsPolicy = Verdict(rawValue: "tls-policy")
        /// The host's pin set is past its `expires` date: pins are no longer enforced, and that is said.
        public static let pinsExpired = Verdict(rawValue: "pins-expired")
        /// No TLS handshake completed: no route, refused, or timed out.
        public static let unreachable = Verdict(rawValue: "unreachable")
        /// The handshake failed validation while connectivity is `portal`: a captive portal,
        /// or an interceptor posing as one. Not an alarm, not trusted either; a pinned
        /// host's failure is still reported, marked as seen behind the portal.
        public static let portal = Verdict(rawValue: "portal")
        /// A certificate looked expired or not yet valid while the clock is not
        /// synchronised: the clock is the suspect, not the server.
        public static let clockUnsynchronized = Verdict(rawValue: "clock-unsynchronized")
        /// Not judged: the round was killed at its deadline (the reason says so).
        public static let unknown = Verdict(rawValue: "unknown")
    }

    /// Reads the daemon's `TrustStatus()` document.
    public init(json: String) throws {
        self = try JSONDecoder().decode(TrustStatus.self, from: Data(json.utf8))
    }

    enum CodingKeys: String, CodingKey { case overall = "trust", hosts, reportsPending = "reports-pending" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        overall = try container.decode(TrustSummary.self, forKey: .overall)
        hosts = try container.decode([Host].self, forKey: .hosts)
        // Absent from a daemon older than the report outbox.
        reportsPending = try container.decodeIfPresent(Int.self, forKey: .reportsPending) ?? 0
    }
}
