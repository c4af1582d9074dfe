import Crypto
import FoundationEssentials
import X509

/// A pin-failure report: RFC 7469's fields as TrustKit sends them, plus the path
/// at the time (CONTRACT.md).
public struct PinFailureReport: Codable, Sendable, Equatable {
    public var dateTime: Date
    public var hostname: String
    public var port: Int
    /// The configured pattern that matched the host.
    public var notedHostname: String
    public var includeSubdomains: Bool
    public var enforcePinning: Bool
    /// PEM, leaf first, as the server sent it.
    public var servedCertificateChain: [String]
    /// PEM, leaf first, as validated (empty when the chain did not validate).
    public var validatedCertificateChain: [String]
    /// `pin-sha256="…"`.
    public var knownPins: [String]
    /// The verdict: `pin-mismatch`, `chain-invalid`, …
    public var validationResult: String
    public var knownPinsExpirationDate: String?
    /// The status and interface when the check ran.
    public var path: [String: String]

    enum CodingKeys: String, CodingKey {
        case dateTime = "date-time", hostname, port, notedHostname = "noted-hostname",
             includeSubdomains = "include-subdomains", enforcePinning = "enforce-pinning",
             servedCertificateChain = "served-certificate-chain",
             validatedCertificateChain = "validated-certificate-chain", knownPins = "known-pins",
             validationResult = "validation-result", knownPinsExpirationDate = "known-pins-expiration-date", path
    }

    public init(dateTime: Date, hostname: String, port: Int, notedHostname: String, includeSubdomains: Bool,
                enforcePinning: Bool, served: [Certificate], validated: [Certificate], knownPins: [PublicKeyPin],
                validationResult: TrustVerdict, knownPinsExpirationDate: Date?, path: [String: String]) throws {
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
    }

    /// What makes two reports "identical" for de-duplication: everything but when,
    /// and the path it was seen on.
    var identity: String {
        var copy = self
        copy.dateTime = Date(timeIntervalSince1970: 0)
        copy.path = [:]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = (try? encoder.encode(copy)) ?? Data()
        let digits = Array("0123456789abcdef")
        return String(SHA256.hash(data: bytes).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}
