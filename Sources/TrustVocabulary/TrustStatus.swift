import FoundationEssentials

/// The latest trust round, as the daemon keeps it: `TrustStatus()`'s and
/// TrustChanged's document, `reachctl trust status --json` (docs/api.md).
/// reachd-trust writes its hosts, the daemon adds the count of waiting reports,
/// clients read it; one type for all three.
public struct TrustStatus: Codable, Sendable, Equatable {
    /// The overall verdict: the path document's `trust`.
    public var overall: TrustSummary
    /// Every configured host, in the config's order (empty before the first round).
    public var hosts: [Host]
    /// Pin-failure reports waiting for their collectors.
    public var reportsPending: Int

    /// A round's status.
    public init(overall: TrustSummary, hosts: [Host], reportsPending: Int) {
        (self.overall, self.hosts, self.reportsPending) = (overall, hosts, reportsPending)
    }

    /// One host's verdict.
    public struct Host: Codable, Sendable, Equatable {
        /// The host name checked (the config's `host`).
        public var host: String
        /// The TCP port of its TLS service.
        public var port: Int
        /// The configured pattern whose policy applied.
        public var pattern: String
        /// What the check found: `trusted`, or why not.
        public var verdict: TrustVerdict
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

        /// A host's verdict.
        public init(
            host: String, port: Int, pattern: String, verdict: TrustVerdict, reason: String, enforced: Bool,
            tlsVersion: String? = nil, presentedPins: [String] = [], warning: String? = nil, checkedAt: Date,
            certificateExpires: Date? = nil
        ) {
            (self.host, self.port, self.pattern, self.verdict, self.reason, self.enforced) = (
                host, port, pattern, verdict, reason, enforced
            )
            (self.tlsVersion, self.presentedPins, self.warning, self.checkedAt, self.certificateExpires) =
                (tlsVersion, presentedPins, warning, checkedAt, certificateExpires)
        }

        enum CodingKeys: String, CodingKey {
            case host, port, pattern, verdict, reason, enforced, tlsVersion = "tls-version", presentedPins = "presented-pins", warning,
                checkedAt = "checked-at", certificateExpires = "certificate-expires"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            host = try container.decode(String.self, forKey: .host)
            port = try container.decode(Int.self, forKey: .port)
            pattern = try container.decode(String.self, forKey: .pattern)
            verdict = try container.decode(TrustVerdict.self, forKey: .verdict)
            reason = try container.decode(String.self, forKey: .reason)
            enforced = try container.decode(Bool.self, forKey: .enforced)
            tlsVersion = try container.decodeIfPresent(String.self, forKey: .tlsVersion)
            presentedPins = try container.decodeIfPresent([String].self, forKey: .presentedPins) ?? []
            warning = try container.decodeIfPresent(String.self, forKey: .warning)
            checkedAt = try Self.date(try container.decode(String.self, forKey: .checkedAt), .checkedAt, container)
            certificateExpires = try container.decodeIfPresent(String.self, forKey: .certificateExpires)
                .map { try Self.date($0, .certificateExpires, container) }
        }

        /// Dates as ISO 8601 text, whatever the encoder's date strategy.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(host, forKey: .host)
            try container.encode(port, forKey: .port)
            try container.encode(pattern, forKey: .pattern)
            try container.encode(verdict, forKey: .verdict)
            try container.encode(reason, forKey: .reason)
            try container.encode(enforced, forKey: .enforced)
            try container.encode(tlsVersion, forKey: .tlsVersion)
            try container.encode(presentedPins, forKey: .presentedPins)
            try container.encodeIfPresent(warning, forKey: .warning)
            try container.encode(checkedAt.formatted(.iso8601), forKey: .checkedAt)
            try container.encodeIfPresent(certificateExpires?.formatted(.iso8601), forKey: .certificateExpires)
        }

        private static func date(_ text: String, _ key: CodingKeys, _ container: KeyedDecodingContainer<CodingKeys>) throws -> Date {
            guard let date = try? Date(text, strategy: .iso8601) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not ISO 8601: \(text)")
            }
            return date
        }
    }

    /// Reads the daemon's `TrustStatus()` document.
    public init(json: String) throws {
        self = try JSONDecoder().decode(TrustStatus.self, from: Data(json.utf8))
    }

    /// The document, keys sorted.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
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
