import SwiftASN1
import X509
import _CryptoExtras

// What RFC 5280, CA/Browser Forum Baseline Requirements and webpki require of a
// TLS server's chain beyond the path checks (RFC5280PathPolicy, NameConstraintsPolicy): small
// VerifierPolicy values, each one rule, in its style. The chain is leaf first,
// trust anchor last.

extension UnverifiedCertificateChain {
    /// The certificates between the leaf and the anchor.
    var intermediates: [Certificate] { count > 2 ? Array(self[1..<count - 1]) : [] }
    var anchor: Certificate { self[count - 1] }
    /// Every certificate that acts as a CA in this chain.
    var authorities: [Certificate] { Array(self[1..<count]) }
}

private extension Certificate {
    func isCritical(_ oid: ASN1ObjectIdentifier) -> Bool? { extensions[oid: oid]?.critical }
    var isSelfIssued: Bool { subject == issuer }
}

private let policyConstraintsID: ASN1ObjectIdentifier = [2, 5, 29, 36]

/// Limits how many intermediates a chain may have; self-issued ones do not count (RFC 5280 6.1.4).
struct ChainLengthPolicy: VerifierPolicy {
    let maximumIntermediates: Int?
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard let maximumIntermediates else { return .meetsPolicy }
        let counted = chain.intermediates.filter { !$0.isSelfIssued }.count
        guard counted > maximumIntermediates else { return .meetsPolicy }
        return .failsToMeetPolicy(reason: "the chain has \(counted) intermediates, at most \(maximumIntermediates) are allowed")
    }
}

/// Extended key usage for TLS servers (CA/B BR 7.1.2): the leaf carries one, not
/// critical, with serverAuth and without anyExtendedKeyUsage; an intermediate
/// that restricts its usage must allow serverAuth; a root carries none.
struct ServerAuthenticationUsagePolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.extendedKeyUsage]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard let usage = (try? chain.leaf.extensions.extendedKeyUsage) ?? nil else {
            return .failsToMeetPolicy(reason: "the certificate has no extended key usage for TLS server authentication")
        }
        guard usage.contains(.serverAuth) else {
            return .failsToMeetPolicy(reason: "the certificate's extended key usage does not allow TLS server authentication")
        }
        if usage.contains(.any) {
            return .failsToMeetPolicy(reason: "the certificate allows any extended key usage")
        }
        if chain.leaf.isCritical(.X509ExtensionID.extendedKeyUsage) == true {
            return .failsToMeetPolicy(reason: "the certificate's extended key usage is marked critical")
        }
        for intermediate in chain.intermediates {
            if let usage = (try? intermediate.extensions.extendedKeyUsage) ?? nil, !usage.contains(.serverAuth), !usage.contains(.any) {
                return .failsToMeetPolicy(reason: "the intermediate \(intermediate.subject) may not issue TLS server certificates")
            }
        }
        if chain.anchor.isSelfIssued, chain.anchor.extensions[oid: .X509ExtensionID.extendedKeyUsage] != nil {
            return .failsToMeetPolicy(reason: "the root \(chain.anchor.subject) carries an extended key usage")
        }
        return .meetsPolicy
    }
}

/// An end-entity certificate is not a CA: no `cA` basic constraint, no keyCertSign
/// usage, no name constraints.
struct EndEntityPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let leaf = chain.leaf
        if case .isCertificateAuthority = try? leaf.extensions.basicConstraints {
            return .failsToMeetPolicy(reason: "the server's certificate is a CA certificate")
        }
        if (try? leaf.extensions.keyUsage)??.keyCertSign == true {
            return .failsToMeetPolicy(reason: "the server's certificate may sign certificates (keyCertSign)")
        }
        if leaf.extensions[oid: .X509ExtensionID.nameConstraints] != nil {
            return .failsToMeetPolicy(reason: "the server's certificate carries name constraints")
        }
        return .meetsPolicy
    }
}

/// Names live in the subject alternative name (CA/B BR 7.1.2.7; the common name
/// is not used for matching), which is critical exactly when the subject is empty
/// (RFC 5280 4.2.1.6). A common name that looks like a host name or address is
/// one of the SAN's values, byte for byte (BR 7.1.4.3); a label such as
/// "My Server" — common from private CAs — is left alone.
struct SubjectAlternativeNamePolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.subjectAlternativeName]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let leaf = chain.leaf
        guard let critical = leaf.isCritical(.X509ExtensionID.subjectAlternativeName),
            let names = (try? leaf.extensions.subjectAlternativeNames) ?? nil
        else {
            return .failsToMeetPolicy(reason: "the certificate has no subject alternative name (the common name is not used)")
        }
        let subjectIsEmpty = leaf.subject.isEmpty
        if subjectIsEmpty && !critical {
            return .failsToMeetPolicy(reason: "the subject is empty but the subject alternative name is not critical")
        }
        if !subjectIsEmpty && critical {
            return .failsToMeetPolicy(reason: "the subject alternative name is critical although the subject is not empty")
        }
        let values = Set(
            names.compactMap { name -> String? in
                switch name {
                case let .dnsName(dns): return dns
                case let .ipAddress(octets): return ServerNamePolicy.addressText(Array(octets.bytes))
                default: return nil
                }
            })
        for commonName in leaf.subject.commonNames where Self.looksLikeHost(commonName) && !values.contains(commonName) {
            return .failsToMeetPolicy(reason: "the common name \(commonName) is not among the subject alternative names")
        }
        return .meetsPolicy
    }
}

extension SubjectAlternativeNamePolicy {
    /// A dotted or colon-separated name with no spaces (a DNS name or an
    /// address), or an IPv4 address in inet_aton's hexadecimal form ("0xC0A80101"),
    /// which BR 7.1.4.3 forbids: it must then be the SAN's dotted-decimal text.
    static func looksLikeHost(_ name: String) -> Bool {
        if name.lowercased().hasPrefix("0x"), name.count > 2, name.dropFirst(2).allSatisfy(\.isHexDigit) { return true }
        return !name.contains(" ") && (name.contains(".") || name.contains(":"))
    }
}

extension DistinguishedName {
    /// The subject's common names, as text.
    var commonNames: [String] {
        flatMap { relativeName in
            relativeName.compactMap { attribute -> String? in
                guard attribute.type == .RDNAttributeType.commonName else { return nil }
                return attribute.value.description
            }
        }
    }
}

/// Key identifiers tie the chain together (RFC 5280 4.2.1.1–2): every issued
/// certificate names its issuer's key (AKI with keyIdentifier); every
/// intermediate names its own (SKI); a self-issued anchor's AKI, if any, is only
/// its own key identifier. The anchor is trusted as configured and needs neither
/// (two of Debian's roots have no SKI).
struct KeyIdentifierPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let anchor = chain.anchor
        for certificate in chain.dropLast() where ((try? certificate.extensions.authorityKeyIdentifier) ?? nil)?.keyIdentifier == nil {
            return .failsToMeetPolicy(reason: "\(certificate.subject) does not identify its issuer's key (authority key identifier)")
        }
        for intermediate in chain.intermediates where ((try? intermediate.extensions.subjectKeyIdentifier) ?? nil) == nil {
            return .failsToMeetPolicy(reason: "the CA \(intermediate.subject) has no subject key identifier")
        }
        if anchor.isSelfIssued, anchor.extensions[oid: .X509ExtensionID.authorityKeyIdentifier] != nil {
            guard let aki = (try? anchor.extensions.authorityKeyIdentifier) ?? nil, let keyIdentifier = aki.keyIdentifier,
                aki.authorityCertIssuer == nil, aki.authorityCertSerialNumber == nil,
                ((try? anchor.extensions.subjectKeyIdentifier) ?? nil)?.keyIdentifier == keyIdentifier
            else {
                return .failsToMeetPolicy(reason: "the root's authority key identifier is not its own key identifier")
            }
        }
        return .meetsPolicy
    }
}

/// RFC 5280's profile for every certificate of the chain: name and policy constraints critical, name constraints not
/// empty; authority information access well-formed; RSA moduli a whole number of
/// bytes; CA certificates with a non-empty subject and keyCertSign when they state
/// a key usage. Issued certificates (not the anchor, which is trusted as
/// configured — nine of Debian's roots have serial 0, three non-critical basic
/// constraints) are version 3, with a positive serial of at most 20 octets, and
/// CAs among them mark basic constraints critical.
struct CertificateProfilePolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        for (position, certificate) in chain.enumerated() {
            let isAnchor = position == chain.count - 1
            if let problem = problem(with: certificate, isAuthority: position > 0, isAnchor: isAnchor) {
                return .failsToMeetPolicy(reason: "\(certificate.subject): \(problem)")
            }
        }
        return .meetsPolicy
    }

    private func problem(with certificate: Certificate, isAuthority: Bool, isAnchor: Bool) -> String? {
        let fields = try? CertificateFields(certificate)
        if !isAnchor {
            if certificate.version != .v3 { return "not a version 3 certificate" }
            let serial = certificate.serialNumber.bytes.drop { $0 == 0 }
            if serial.isEmpty { return "the serial number is zero" }
            if serial.count > 20 { return "the serial number is longer than 20 octets" }
            if isAuthority, certificate.isCritical(.X509ExtensionID.basicConstraints) == false {
                return "basic constraints are not critical"
            }
        }
        if certificate.extensions[oid: .X509ExtensionID.authorityInformationAccess] != nil,
            (try? certificate.extensions.authorityInformationAccess) == nil
        {
            return "the authority information access extension is malformed"
        }
        if certificate.isCritical(.X509ExtensionID.nameConstraints) == false { return "name constraints are not critical" }
        if certificate.isCritical(policyConstraintsID) == false { return "policy constraints are not critical" }
        if let constraints = (try? certificate.extensions.nameConstraints) ?? nil {
            let all = Array(constraints.permittedDNSDomains) + Array(constraints.excludedDNSDomains)
            if constraints.permittedSubtrees.isEmpty && constraints.excludedSubtrees.isEmpty {
                return "name constraints are empty"
            }
            if all.contains(where: { $0.hasPrefix(".") }) { return "a DNS name constraint starts with a period" }
        }
        if _RSA.Signing.PublicKey(certificate.publicKey) != nil, let bits = fields?.rsaModulusBits, bits % 8 != 0 {
            return "the RSA modulus has \(bits) bits, not a whole number of bytes"
        }
        guard isAuthority else { return nil }
        if certificate.subject.isEmpty { return "a CA certificate with an empty subject" }
        if let usage = (try? certificate.extensions.keyUsage) ?? nil, !usage.keyCertSign {
            return "a CA certificate whose key usage does not allow certificate signing"
        }
        return nil
    }
}

/// Refuses chains whose name-constraint check would be quadratic beyond reason
/// (x509-limbo's nc-dos cases): names times constraints, bounded like webpki's budget.
struct NameConstraintsBudgetPolicy: VerifierPolicy {
    static let budget = 1_024
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let names = ((try? chain.leaf.extensions.subjectAlternativeNames) ?? nil).map { Array($0).count } ?? 0
        let constraints = chain.authorities.reduce(0) { total, authority in
            guard let constraints = (try? authority.extensions.nameConstraints) ?? nil else { return total }
            return total + Array(constraints.permittedSubtrees).count + Array(constraints.excludedSubtrees).count
        }
        guard (names + 1) * constraints > Self.budget else { return .meetsPolicy }
        return .failsToMeetPolicy(reason: "checking \(names) names against \(constraints) name constraints exceeds the budget")
    }
}
