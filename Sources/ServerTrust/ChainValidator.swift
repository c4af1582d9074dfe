import FoundationEssentials
import X509

/// The default evaluation: the presented chain must lead to a trust anchor under
/// RFC 5280, and the leaf must be valid for the host name or address (RFC 6125).
public struct ChainValidator: Sendable {
    /// The trust anchors: the system's roots, configured anchors, or pinned certificates.
    public let anchors: [Certificate]
    /// Built once: indexing ~150 system roots costs as much as validating a chain.
    private let anchorStore: CertificateStore
    /// When to validate at; nil: now.
    public var validationTime: Date?
    /// The most intermediates a chain may have; nil: no limit beyond the verifier's.
    public var maximumIntermediates: Int?

    /// Registries no wildcard may cover.
    public var publicSuffixes: PublicSuffixList
    /// Which rules apply beyond RFC 5280 and the name.
    public var profile: Profile

    /// The rules a chain is held to.
    public enum Profile: Sendable {
        /// Public CAs: RFC 5280 plus the CA/Browser Forum and webpki rules.
        case webPKI
        /// Anchors the user pinned (self-signed and private CAs): RFC 5280 and the name only.
        case pinnedAnchors
    }

    /// A validator of chains against `anchors`.
    ///
    /// - Parameters:
    ///   - anchors: The trust anchors: the system's roots, or a host's own.
    ///   - validationTime: The time to validate at; nil: now.
    ///   - maximumIntermediates: The longest chain of intermediates accepted; nil: the policy's default.
    ///   - publicSuffixes: Where wildcard names may not reach (no `*.co.uk`).
    ///   - profile: The web PKI's rules, or RFC 5280 alone for pinned private anchors.
    public init(
        anchors: [Certificate], validationTime: Date? = nil, maximumIntermediates: Int? = nil,
        publicSuffixes: PublicSuffixList = .system, profile: Profile = .webPKI
    ) {
        self.anchors = anchors
        anchorStore = CertificateStore(anchors)
        self.validationTime = validationTime
        self.maximumIntermediates = maximumIntermediates
        self.publicSuffixes = publicSuffixes
        self.profile = profile
    }

    /// Debian's bundle of the system's trusted roots.
    public static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// The system's trusted roots.
    public static func systemAnchors(bundle: String = systemBundle) throws -> [Certificate] {
        try CertificateLoader.certificates(inFile: bundle)
    }

    /// What came of validating a chain.
    public enum Outcome: Sendable, Equatable {
        /// The validated chain, leaf first, ending at an anchor (which the server may not have sent).
        case trusted([Certificate])
        /// No chain validated: the first failure, as a verdict and a reason.
        case untrusted(TrustEvaluation)
    }

    /// Validates `presented` (leaf first, as the server sent it) for `host`:
    /// a DNS name or an IP address; nil skips the identity check.
    public func validate(_ presented: [Certificate], host: String?) async -> Outcome {
        guard let leaf = presented.first else { return .untrusted(TrustEvaluation(.chainInvalid, "the server sent no certificate")) }
        let intermediates = CertificateStore(Array(presented.dropFirst()))
        // Certificates count whole seconds: 00:00:00.999 is before a notBefore of 00:00:01.
        let time = Date(timeIntervalSince1970: (validationTime ?? Date()).timeIntervalSince1970.rounded(.down))
        var verifier = Verifier(rootCertificates: anchorStore) {
            webPKIPolicies(at: time)
            if let host { ServerNamePolicy(host: host, publicSuffixes: publicSuffixes) }
        }
        switch await verifier.validate(leaf: leaf, intermediates: intermediates) {
        case let .validCertificate(chain):
            return .trusted(Array(chain))
        case let .couldNotValidate(failures):
            return .untrusted(await explain(leaf: leaf, intermediates: intermediates, time: time, failures: failures, host: host))
        }
    }

    /// Everything but the identity check. The name-constraint budget comes first: it
    /// stops pathological chains before RFC 5280's quadratic name-constraint check runs.
    @PolicyBuilder
    private func webPKIPolicies(at time: Date) -> some VerifierPolicy {
        NameConstraintsBudgetPolicy()
        RFC5280PathPolicy(validationTime: time)
        NameConstraintsPolicy()
        ChainLengthPolicy(maximumIntermediates: maximumIntermediates)
        if profile == .webPKI {
            CertificateProfilePolicy()
            KeyIdentifierPolicy()
            EndEntityPolicy()
            ServerAuthenticationUsagePolicy()
            SubjectAlternativeNamePolicy()
        }
    }

    /// Whether the leaf names `host`, and nothing else: for policies that allow
    /// invalid chains but still check the name.
    public static func leaf(_ leaf: Certificate, isValidFor host: String, publicSuffixes: PublicSuffixList = .system) async -> Bool {
        var verifier = Verifier(rootCertificates: CertificateStore([leaf])) {
            ServerNamePolicy(host: host, publicSuffixes: publicSuffixes)
        }
        if case .validCertificate = await verifier.validate(leaf: leaf, intermediates: CertificateStore()) { return true }
        return false
    }

    /// Names the failure: a chain that validates without the identity check is a
    /// host mismatch; a certificate outside its validity period is expired.
    private func explain(
        leaf: Certificate, intermediates: CertificateStore, time: Date,
        failures: [CertificateValidationResult.PolicyFailure], host: String?
    ) async -> TrustEvaluation {
        if let host {
            var withoutIdentity = Verifier(rootCertificates: anchorStore) { webPKIPolicies(at: time) }
            if case .validCertificate = await withoutIdentity.validate(leaf: leaf, intermediates: intermediates) {
                return TrustEvaluation(.hostMismatch, "the certificate is not valid for \(host)")
            }
        }
        if time < leaf.notValidBefore {
            return TrustEvaluation(.expired, "the certificate is not valid before \(leaf.notValidBefore.formatted(.iso8601))")
        }
        if time > leaf.notValidAfter {
            return TrustEvaluation(.expired, "the certificate expired at \(leaf.notValidAfter.formatted(.iso8601))")
        }
        let reason = failures.first.map { "\($0.policyFailureReason)" } ?? "no chain leads to a trusted anchor"
        return TrustEvaluation(.chainInvalid, reason)
    }
}
