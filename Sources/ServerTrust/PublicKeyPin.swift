import Crypto
import FoundationEssentials
import SwiftASN1
import X509

/// An HPKP-style pin: SHA-256 of a certificate's DER SubjectPublicKeyInfo
/// (`openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256`).
///
/// The hash covers the whole SPKI — algorithm identifier and key — taken from
/// the certificate's own DER bytes. (swift-certificates' `subjectPublicKeyInfoBytes`
/// is only the key's BIT STRING: its hash is not the pin.)
public struct PublicKeyPin: Hashable, Sendable, CustomStringConvertible {
    /// 32 bytes.
    public let sha256: [UInt8]

    /// A pin from its 32 raw bytes.
    public init?(sha256: [UInt8]) {
        guard sha256.count == 32 else { return nil }
        self.sha256 = sha256
    }

    /// The pin of a certificate's public key.
    public init(certificate: Certificate) throws {
        sha256 = Array(SHA256.hash(data: try Self.subjectPublicKeyInfoDER(of: certificate)))
    }

    /// Parses `sha256/BASE64`, curl's `sha256//BASE64`, RFC 7469's `pin-sha256="BASE64"`,
    /// or bare base64. Anything that is not 32 bytes is rejected.
    public init(parsing text: String) throws(PinParsingError) {
        // Spaces and tabs around it (Foundation's `.whitespaces`, without importing it).
        let isBlank = { (character: Character) in character.isWhitespace && !character.isNewline }
        var body = Substring(text).drop(while: isBlank)
        while let last = body.last, isBlank(last) { body = body.dropLast() }
        let lowercased = body.lowercased()
        // Bare base64 is exactly a pin's length (one pin in 64^7 begins "sha256/":
        // the length, not the prefix, says which spelling it is).
        if body.count == Self.base64Length {
        } else if lowercased.hasPrefix("pin-sha256=") {
            body = body.dropFirst("pin-sha256=".count)
        } else if lowercased.hasPrefix("sha256/") {
            body = body.dropFirst("sha256/".count)
            // One base64 pin in 64 itself begins with "/" ("sha256/" + it reads
            // "sha256//…"): the "/" is curl's only when the rest is one longer than a pin.
            if body.hasPrefix("/") && body.count == Self.base64Length + 1 { body = body.dropFirst() }
        }
        if body.hasPrefix("\""), body.hasSuffix("\""), body.count >= 2 { body = body.dropFirst().dropLast() }
        guard let bytes = Data(base64Encoded: String(body)) else {
            throw PinParsingError(text: text, reason: "is not base64")
        }
        guard let pin = PublicKeyPin(sha256: Array(bytes)) else {
            throw PinParsingError(text: text, reason: "is \(bytes.count) bytes, a SHA-256 pin is 32")
        }
        self = pin
    }

    /// The length of 32 bytes in padded base64.
    static let base64Length = 44

    /// `sha256/BASE64`.
    public var description: String { "sha256/" + Data(sha256).base64EncodedString() }

    /// The DER SubjectPublicKeyInfo exactly as the certificate carries it.
    static func subjectPublicKeyInfoDER(of certificate: Certificate) throws -> ArraySlice<UInt8> {
        try CertificateFields(certificate).subjectPublicKeyInfo
    }
}

/// A pin that could not be read.
public struct PinParsingError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The pin as written.
    public let text: String
    /// What is wrong with it.
    public let reason: String
    public var description: String { "pin \"\(text)\" \(reason)" }
}
