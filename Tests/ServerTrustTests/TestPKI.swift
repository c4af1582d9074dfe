import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificates issued inside the tests with swift-certificates, valid around a
/// fixed moment so that nothing ever expires.
struct TestAuthority {
    /// The moment every test validates at (2026-11-18).
    static let now = Date(timeIntervalSince1970: 1_795_000_000)
    static let year: TimeInterval = 365 * 24 * 3600

    let key: Certificate.PrivateKey
    let certificate: Certificate
    /// The moment the authority's certificates are valid around: `now`, or the
    /// real clock for tests whose peers use it (an OCSP responder).
    var center = now

    /// - Parameter center: the moment its certificates are valid around.
    static func root(_ name: String, center: Date = now) throws -> TestAuthority {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let subject = try DistinguishedName { CommonName(name) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: center - year, notValidAfter: center + year, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: key.publicKey)
            },
            issuerPrivateKey: key)
        return TestAuthority(key: key, certificate: certificate, center: center)
    }

    func intermediate(_ name: String, nameConstraints: NameConstraints? = nil) throws -> TestAuthority {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let certificate = try issue(
            publicKey: key.publicKey, subject: try DistinguishedName { CommonName(name) },
            notBefore: center - Self.year, notAfter: center + Self.year
        ) {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: key.publicKey)
            if let nameConstraints { Critical(nameConstraints) }
        }
        return TestAuthority(key: key, certificate: certificate, center: center)
    }

    /// A TLS server certificate for `names` (DNS names, or IP addresses when they
    /// parse as one), plus `otherNames` of other forms.
    func leaf(
        _ names: [String], otherNames: [GeneralName] = [],
        key: Certificate.PrivateKey = Certificate.PrivateKey(P256.Signing.PrivateKey()),
        notBefore: Date? = nil, notAfter: Date? = nil,
        serverAuth: Bool = true, ocspResponder: String? = nil
    ) throws -> Certificate {
        let alternativeNames = SubjectAlternativeNames(
            names.map { name -> GeneralName in
                if let address = Self.addressBytes(name) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(address))) }
                return .dnsName(name)
            } + otherNames)
        return try issue(
            publicKey: key.publicKey, subject: try DistinguishedName { CommonName("Test Server") },
            notBefore: notBefore ?? center - 3600, notAfter: notAfter ?? center + 30 * 24 * 3600
        ) {
            KeyUsage(digitalSignature: true, keyEncipherment: true)
            if serverAuth { try ExtendedKeyUsage([.serverAuth]) }
            alternativeNames
            if let ocspResponder {
                AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(ocspResponder))])
            }
        }
    }

    private func issue(
        publicKey: Certificate.PublicKey, subject: DistinguishedName, notBefore: Date, notAfter: Date,
        @ExtensionsBuilder extensions: () throws -> Result<Certificate.Extensions, any Error>
    ) throws -> Certificate {
        var all = try extensions().get()
        let issuerKeyIdentifier = try certificate.extensions.subjectKeyIdentifier?.keyIdentifier
        try all.append(Certificate.Extension(AuthorityKeyIdentifier(keyIdentifier: issuerKeyIdentifier), critical: false))
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: certificate.subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: all, issuerPrivateKey: key)
    }

    static func addressBytes(_ text: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        if text.contains(":") { return inet_pton(AF_INET6, text, &buffer) == 1 ? buffer : nil }
        return inet_pton(AF_INET, text, &buffer) == 1 ? Array(buffer.prefix(4)) : nil
    }
}
