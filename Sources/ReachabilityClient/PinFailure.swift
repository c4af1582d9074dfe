import FoundationEssentials
@_exported import TrustVocabulary

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
    /// The verdict: `pin-mismatch`, `chain-invalid`, …
    public var validationResult: TrustVerdict
    /// The day the pin set stops being enforced (`YYYY-MM-DD`), if it has an expiry.
    public var knownPinsExpirationDate: String?
    /// The status, interface and connectivity when the check ran.
    public var path: [String: String]
    /// Set when the failure was seen while the probe found a captive portal: what the
    /// probe got. The verdict is then `portal`; whether that was a portal or an
    /// interceptor posing as one is for the subscriber to weigh (docs/security.md).
    public var captivePortal: CaptivePortalEvidence?

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
