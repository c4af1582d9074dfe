import SwiftASN1
import X509

/// Fields read from a certificate's own DER, for what swift-certificates does
/// not expose as it was encoded. (Re-serializing a parsed certificate would
/// normalize what these checks look at.)
struct CertificateFields {
    /// TBSCertificate's fields after the optional version:
    /// serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, …
    let fields: [ASN1Node]

    init(_ certificate: Certificate) throws {
        let tbs = try DER.parse(certificate.tbsCertificateBytes)
        guard case let .constructed(tbsNodes) = tbs.content else {
            throw ASN1Error.invalidASN1Object(reason: "no TBSCertificate")
        }
        var fields = Array(tbsNodes)
        if let first = fields.first, first.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            fields.removeFirst()
        }
        guard fields.count > 5 else { throw ASN1Error.invalidASN1Object(reason: "a TBSCertificate without SubjectPublicKeyInfo") }
        self.fields = fields
    }

    /// The DER SubjectPublicKeyInfo exactly as encoded.
    var subjectPublicKeyInfo: ArraySlice<UInt8> { fields[5].encodedBytes }

    /// The bit length of an RSA modulus (`keySizeInBits` rounds up to whole bytes).
    var rsaModulusBits: Int? {
        guard case let .constructed(spki) = fields[5].content else { return nil }
        let parts = Array(spki)
        guard parts.count == 2, case let .primitive(bitString) = parts[1].content, bitString.count > 1,
            let key = try? DER.parse(Array(bitString.dropFirst())),
            case let .constructed(numbers) = key.content,
            let modulus = numbers.first(where: { _ in true }),
            case let .primitive(modulusBytes) = modulus.content
        else { return nil }
        let significant = modulusBytes.drop { $0 == 0 }
        guard let first = significant.first else { return nil }
        return significant.count * 8 - first.leadingZeroBitCount
    }
}
