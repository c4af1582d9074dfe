import NIOSSL
import X509

/// The transport baseline of Apple's App Transport Security: TLS 1.2 or later,
/// a forward-secret key exchange, certificates signed with SHA-256 or better,
/// and keys of at least RSA 2048 or EC 256 bits.
public struct TLSPolicyEvaluator: ServerTrustEvaluator {
    /// The ATS baseline check.
    public init() {}

    /// Cipher suites a client keeps to when it requires forward secrecy (TLS 1.2
    /// and older; every TLS 1.3 suite is forward-secret).
    public static let forwardSecretCipherSuites: [NIOTLSCipher] = [
        .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        .TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, .TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
        .TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, .TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA
    ]
    /// Static-RSA key exchange: a stolen server key decrypts every recorded session.
    public static let staticKeyCipherSuites: [NIOTLSCipher] = [
        .TLS_RSA_WITH_AES_128_GCM_SHA256, .TLS_RSA_WITH_AES_256_GCM_SHA384,
        .TLS_RSA_WITH_AES_128_CBC_SHA, .TLS_RSA_WITH_AES_256_CBC_SHA
    ]

    static let strongSignatures: Set<Certificate.SignatureAlgorithm> = [
        .ecdsaWithSHA256, .ecdsaWithSHA384, .ecdsaWithSHA512,
        .sha256WithRSAEncryption, .sha384WithRSAEncryption, .sha512WithRSAEncryption, .ed25519
    ]

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        if let version = context.connection?.version, version.rank < TLSVersion.tlsv12.rank {
            return TrustEvaluation(.tlsPolicy, "the server negotiated \(version.name); the baseline is TLS 1.2 or later")
        }
        if context.connection?.forwardSecret == false {
            return TrustEvaluation(.tlsPolicy, "the server offers no forward-secret key exchange (ECDHE)")
        }
        if let problem = Self.weakness(of: context.chain) {
            return TrustEvaluation(.tlsPolicy, problem)
        }
        guard let connection = context.connection else {
            return TrustEvaluation(.trusted, "SHA-256+ signatures (no connection: protocol not judged)")
        }
        let version = connection.version.map { "\($0.name), " } ?? ""
        return TrustEvaluation(.trusted, "\(version)\(connection.forwardSecret == nil ? "" : "forward-secret, ")SHA-256+ signatures")
    }

    /// The first certificate, leaf first, whose signature is below the baseline.
    /// A root's self-signature is not checked: the anchor is trusted for what it is.
    /// Key sizes need no check here: swift-crypto refuses RSA keys below 2048 bits
    /// and swift-certificates parses only P-256, P-384, P-521 and Ed25519 keys, so
    /// a weaker certificate never parses (the probe reports it as `chain-invalid`).
    public static func weakness(of chain: [Certificate]) -> String? {
        for (index, certificate) in chain.enumerated() {
            let which = index == 0 ? "the server certificate" : "\"\(certificate.subject)\""
            let selfSigned = certificate.issuer == certificate.subject && index == chain.count - 1 && index > 0
            if !selfSigned && !strongSignatures.contains(certificate.signatureAlgorithm) {
                return "\(which) is signed with \(certificate.signatureAlgorithm); the baseline is SHA-256 or better"
            }
        }
        return nil
    }
}

/// Comparison of TLS versions, oldest first.
extension TLSVersion {
    /// Orders versions: NIOSSL's enum is not Comparable.
    var rank: Int {
        switch self {
        case .tlsv1: 10
        case .tlsv11: 11
        case .tlsv12: 12
        case .tlsv13: 13
        }
    }

    /// "TLS 1.2".
    public var name: String {
        switch self {
        case .tlsv1: "TLS 1.0"
        case .tlsv11: "TLS 1.1"
        case .tlsv12: "TLS 1.2"
        case .tlsv13: "TLS 1.3"
        }
    }
}
