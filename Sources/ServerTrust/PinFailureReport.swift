import Crypto
import FoundationEssentials
import X509

/// A pin-failure report: RFC 7469's fields as TrustKit sends them, plus the path
/// at the time (docs/trust.md).
public struct PinFailureReport: Codable, Sendable, Equatable {
    /// When the failure was seen (`date-time`).
    public var dateTime: Date
    /// The host checked.
    public var hostname: String
    /// Its TLS port.
    public var port: Int
    /// The configured pattern that matched the host.
    public var notedHostname: String
    /// Whether the pattern covers subdomains (`*.` or `**.`).
    public var includeSubdomains: Bool
    /// false for a report-only pin set.
    public var enforcePinning: Bool
    /// PEM, leaf first, as the server sent it.
    public var servedCertificateChain: [String]
    /// PEM, leaf first, as validated (empty when the chain did not validate).
    public var validatedCertificateChain: [String]
    /// `pin-sha256="…"`.
    public var knownPins: [String]
    /// The verdict: `pin-mismatch`, `chain-invalid`, …
    public var validationResult: String
    /// The day the pin set stops being enforced, if it has an expiry (`YYYY-MM-DD`).
    public var knownPinsExpirationDate: String?
    /// The status, interface and connectivity when the check ran.
    public var path: [String: String]
    /// Set when the failure was seen while the connectivity probe found a captive
    /// portal: the probe's answer. Nobody can tell a real portal from an interceptor
    /// posing as one over plain HTTP, so the failure is recorded either way; this
    /// mark lets the collector and the subscribers decide (docs/security.md).
    public var captivePortal: CaptivePortalEvidence?

    enum CodingKeys: String, CodingKey {
        case dateTime = "date-time", hostname, port, notedHostname = "noted-hostname",
            includeSubdomains = "include-subdomains", enforcePinning = "enforce-pinning",
            servedCertificateChain = "served-certificate-chain",
            validatedCertificateChain = "validated-certificate-chain", knownPins = "known-pins",
            validationResult = "validation-result", knownPinsExpirationDate = "known-pins-expiration-date", path,
            captivePortal = "captive-portal"
    }

    /// A report of one failure.
    ///
    /// - Parameters:
    ///   - dateTime: When it was seen.
    ///   - hostname: The host checked.
    ///   - port: Its TLS port.
    ///   - notedHostname: The configured pattern that matched.
    ///   - includeSubdomains: Whether the pattern covers subdomains.
    ///   - enforcePinning: false for a report-only pin set.
    ///   - served: The chain as the server sent it, leaf first.
    ///   - validated: The chain that validated, if one did.
    ///   - knownPins: The configured pins.
    ///   - validationResult: The verdict.
    ///   - knownPinsExpirationDate: When the pins stop being enforced.
    ///   - path: The status, interface and connectivity when the check ran.
    ///   - captivePortal: The probe's answer, when it found a captive portal.
    /// - Throws: when a certificate cannot be serialized to PEM.
    public init(
        dateTime: Date, hostname: String, port: Int, notedHostname: String, includeSubdomains: Bool,
        enforcePinning: Bool, served: [Certificate], validated: [Certificate], knownPins: [PublicKeyPin],
        validationResult: TrustVerdict, knownPinsExpirationDate: Date?, path: [String: String],
        captivePortal: CaptivePortalEvidence? = nil
    ) throws {
        self.dateTime = dateTime
        self.hostname = hostname
        self.port = port
        self.notedHostname = notedHostname
        self.includeSubdomains = includeSubdomains
        self.enforcePinning = enforcePinning
        servedCertificateChain = try served.map { try $0.serializeAsPEM().pemString }
        validatedCertificateChain = try validated.map { try $0.serializeAsPEM().pemString }
        self.knownPins = knownPins.map { "pin-sha256=\"\(Data($0.sha256).base64EncodedString())\"" }.sorted()
        self.validationResult = validationResult.rawValue
        self.knownPinsExpirationDate = knownPinsExpirationDate.map { $0.formatted(Date.ISO8601FormatStyle().year().month().day()) }
        self.path = path
        self.captivePortal = captivePortal
    }

    /// What makes two reports "identical" for de-duplication: everything but when,
    /// and the path it was seen on. A report that cannot be encoded has none (it
    /// could not be written either): it throws rather than share one with every other.
    func identity() throws -> String {
        var copy = self
        copy.dateTime = Date(timeIntervalSince1970: 0)
        copy.path = [:]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = try encoder.encode(copy)
        let digits = Array("0123456789abcdef")
        return String(SHA256.hash(data: bytes).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }

    /// The report as RFC 7469's JSON, keys sorted, dates in ISO 8601.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}
