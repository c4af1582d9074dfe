import FoundationEssentials
import TOML
import X509

/// One `[[trust.host]]` entry: which server, how to reach it, and how to judge it.
public struct HostTrustConfiguration: Sendable {
    /// Which hosts: an exact name, `*.domain` or `**.domain`.
    public var pattern: HostPattern
    /// The TLS port to check (443 by default).
    public var port: Int
    /// The address to dial instead of resolving the name; SNI and the name check still use the name.
    public var connect: String?
    /// How the chain is judged: mode, pins, anchors, revocation, the ATS baseline.
    public var policy: TrustPolicy
    /// The pins with TrustKit's rules (expiry, report-only, the backup-pin rule);
    /// nil unless the host is pinned. In certificate mode, the pinned certificates' keys.
    public var pinSet: PinSet?
    /// Where pin-failure reports are also POSTed (RFC 7469 report-uri).
    public var reportURIs: [String]

    /// One host's entry.
    ///
    /// - Parameters:
    ///   - pattern: Which hosts.
    ///   - port: The TLS port.
    ///   - connect: The address to dial instead of resolving the name.
    ///   - policy: How the chain is judged.
    ///   - pinSet: Pins with TrustKit's rules, instead of the policy's bare pins.
    ///   - reportURIs: Where pin-failure reports are also POSTed.
    public init(
        pattern: HostPattern, port: Int = 443, connect: String? = nil, policy: TrustPolicy,
        pinSet: PinSet? = nil, reportURIs: [String] = []
    ) {
        self.pattern = pattern
        self.port = port
        self.connect = connect
        self.policy = policy
        self.pinSet = pinSet
        self.reportURIs = reportURIs
    }

    /// Whether a failure of this host produces a pin-failure report.
    public var isPinned: Bool { policy.mode == .publicKey || policy.mode == .certificate }

    package init(reading table: inout TOMLTableReader, relativeTo directory: String, line: Int) throws {
        guard let (match, matchLine) = try table.string("match") else {
            throw table.error("[[trust.host]] needs match = \"host name\"", line: line)
        }
        do {
            pattern = try HostPattern(match)
        } catch {
            throw table.error("\(error)", line: matchLine)
        }
        port = try table.integer("port", in: 1...65535) ?? 443
        connect = try table.string("connect")?.value
        if let connect, let connectLine = table.table["connect"]?.line, ServerNamePolicy.addressBytes(connect) == nil {
            throw table.error("connect must be an IPv4 or IPv6 address, not \"\(connect)\"", line: connectLine)
        }

        var mode = TrustPolicy.Mode.default
        if let (text, modeLine) = try table.string("mode") {
            guard let parsed = TrustPolicy.Mode(rawValue: text) else {
                throw table.error(
                    "mode must be one of \(TrustPolicy.Mode.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(text)\"",
                    line: modeLine)
            }
            mode = parsed
        }
        var pins: Set<PublicKeyPin> = []
        for (text, pinLine) in try table.strings("pins") ?? [] {
            do {
                pins.insert(try PublicKeyPin(parsing: text))
            } catch {
                throw table.error("\(error)", line: pinLine)
            }
        }
        var certificates: [Certificate] = []
        for (name, fileLine) in try table.strings("certificates") ?? [] {
            certificates += try Self.load(name, relativeTo: directory, line: fileLine, in: table)
        }
        var anchors: [Certificate] = []
        for (name, fileLine) in try table.strings("anchors") ?? [] {
            anchors += try Self.load(name, relativeTo: directory, line: fileLine, in: table)
        }
        var revocation: RevocationTrustEvaluator.Mode?
        if let (text, revocationLine) = try table.string("revocation"), text != "none" {
            guard let parsed = RevocationTrustEvaluator.Mode(rawValue: text) else {
                throw table.error("revocation must be none, ocsp-soft or ocsp-hard, not \"\(text)\"", line: revocationLine)
            }
            revocation = parsed
        }
        var requiresTLSBaseline = true
        if let (text, tlsLine) = try table.string("tls") {
            guard text == "ats" || text == "none" else { throw table.error("tls must be ats or none, not \"\(text)\"", line: tlsLine) }
            requiresTLSBaseline = text == "ats"
        }
        do {
            policy = try TrustPolicy(
                mode: mode, pins: pins, certificates: certificates,
                validateChain: try table.bool("validate-chain") ?? true,
                validateHost: try table.bool("validate-host") ?? true,
                acceptSelfSigned: try table.bool("accept-self-signed") ?? false,
                anchors: anchors, revocation: revocation, requiresTLSBaseline: requiresTLSBaseline)
        } catch let error as TrustPolicyError {
            throw table.error("\(match): \(error)", line: line)
        }
        if mode != .publicKey && !pins.isEmpty, let pinLine = table.table["pins"]?.line {
            throw table.error("pins are only used with mode = \"public-key\"", line: pinLine)
        }
        if mode != .certificate && !certificates.isEmpty, let fileLine = table.table["certificates"]?.line {
            throw table.error("certificates are only used with mode = \"certificate\"", line: fileLine)
        }

        var expires: Date?
        if let value = table.value("expires") {
            guard case let .date(year, month, day) = value.kind, let start = Self.utcMidnight(year: year, month: month, day: day) else {
                throw table.error("expires must be a date such as 2027-06-30, not \(value.typeName)", line: value.line)
            }
            // "After this date": the whole day still counts.
            expires = start + 86399
        }
        let enforce = try table.bool("enforce") ?? true
        let minimumPins = try table.integer("min-pins", in: 1...100)
        if mode == .publicKey || mode == .certificate {
            let keys = mode == .publicKey ? pins : Set(certificates.compactMap { try? PublicKeyPin(certificate: $0) })
            do {
                pinSet = try PinSet(pins: keys, expires: expires, enforce: enforce, minimumPins: minimumPins)
            } catch {
                throw table.error("\(match): \(error)", line: line)
            }
        } else if let value = table.table["expires"] ?? table.table["enforce"] ?? table.table["min-pins"] {
            throw table.error(
                "expires, enforce and min-pins apply to pins: they need mode = \"public-key\" or \"certificate\"", line: value.line)
        }
        reportURIs = try table.strings("report-uri")?.map(\.value) ?? []
        for uri in reportURIs where !(uri.hasPrefix("https://") || uri.hasPrefix("http://")) {
            throw table.error("report-uri must hold http:// or https:// URLs, not \"\(uri)\"", line: table.table["report-uri"]!.line)
        }
        try table.finish()
    }

    private static func load(
        _ name: String, relativeTo directory: String, line: Int, in table: TOMLTableReader
    ) throws(TOMLError) -> [Certificate] {
        let path = TrustConfiguration.resolve(name, in: directory)
        do {
            return try CertificateLoader.certificates(inFile: path)
        } catch {
            throw table.error("\(error)", line: line)
        }
    }

    /// Midnight UTC of a calendar date; nil for one that does not exist (2027-02-30).
    static func utcMidnight(year: Int, month: Int, day: Int) -> Date? {
        guard (1...12).contains(month), day >= 1 else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= lengths[month - 1] else { return nil }
        // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days) * 86_400)
    }
}
