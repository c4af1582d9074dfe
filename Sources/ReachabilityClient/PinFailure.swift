import FoundationEssentials

/// A pin-failure report as the daemon signals it (`PinFailure`, docs/trust.md):
/// RFC 7469's fields as TrustKit sends them, the path at the time, and the probe's
/// evidence when the failure was seen behind a captive portal.
public struct PinFailure: Decodable, Sendable, Equatable {
    /// When the failure was seen.
    public var dateTime: Date
    /// The host checked.
    public var hostname: String
    /// Its TLS port.
    public var port: Int
    /// The configured pattern that matched the host.
    public var notedHostname: String
    /// Whether the pattern covers subdomains.
    public var includeSubdomains: Bool
    /// false for a report-only pin set: the mismatch is reported, the host not failed.
    public var enforcePinning: Bool
    /// PEM, leaf first, as the server sent it.
    public var servedCertificateChain: [String]
    /// PEM, leaf first, as validated (empty when the chain did not validate).
    public var validatedCertificateChain: [String]
    /// `pin-sha256="…"`, the configured pins.
    public var knownPins: [String]
    /// The verdict: `pin-mismatch`, `chain-invalid`, … (``TrustStatus/Verdict``'s words).
    public var validationResult: String
    /// The day the pin set stops being enforced (`YYYY-MM-DD`), if it has an expiry.
    public var knownPinsExpirationDate: String?
    /// The status, interface and connectivity when the check ran.
    public var path: [String: String]
    /// Set when the failure was seen while the probe found a captive portal: what the
    /// probe got. The verdict is then `portal`; whether that was a portal or an
    /// interceptor posing as one is for the subscriber to weigh (docs/security.md).
    public var captivePortal: CaptivePortal?

    /// What was known of the captive portal (docs/connectivity.md).
    public struct CaptivePortal: Decodable, Sendable, Equatable {
        /// Whose word the portal is on: `announced` (the network's API said captive),
        /// `redirect` (the probe alone), `contradicted` (the probe was redirected, but the
        /// network's API said it is not captive: the failure was judged an attack).
        public var evidence: String
        /// The probe's HTTP status (302 for a redirect), when it got an HTTP answer.
        public var httpStatus: Int?
        /// The redirect's target, when there was one.
        public var location: String?
        /// The network's captive-portal API, when one is known.
        public var api: String?
        /// The page the API sent the user to, when it announced the portal.
        public var userPortalURL: String?

        enum CodingKeys: String, CodingKey {
            case evidence, httpStatus = "http-status", location, api, userPortalURL = "user-portal-url"
        }

        /// Reads the mark of a report; one without `evidence` (written before it was) is the probe's: `redirect`.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            evidence = try container.decodeIfPresent(String.self, forKey: .evidence) ?? "redirect"
            httpStatus = try container.decodeIfPresent(Int.self, forKey: .httpStatus)
            location = try container.decodeIfPresent(String.self, forKey: .location)
            api = try container.decodeIfPresent(String.self, forKey: .api)
            userPortalURL = try container.decodeIfPresent(String.self, forKey: .userPortalURL)
        }
    }

    enum CodingKeys: String, CodingKey {
        case dateTime = "date-time", hostname, port, notedHostname = "noted-hostname",
             includeSubdomains = "include-subdomains", enforcePinning = "enforce-pinning",
             servedCertificateChain = "served-certificate-chain",
             validatedCertificateChain = "validated-certificate-chain", knownPins = "known-pins",
             validationResult = "validation-result", knownPinsExpirationDate = "known-pins-expiration-date", path,
             captivePortal = "captive-portal"
    }

    /// Reads one report as the daemon signals it.
    public init(json: String) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        self = try decoder.decode(PinFailure.self, from: Data(json.utf8))
    }
}
