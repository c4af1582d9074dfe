import FoundationEssentials
import NIOCore
import X509

/// How one host's certificates are judged: AFSecurityPolicy's and Alamofire's
/// model. The default evaluation validates the chain to the system's roots (plus
/// `anchors`) and the host name; pinning then requires a pinned key or
/// certificate in the chain that was *validated* — which may end at a pinned
/// root the server never sent — so appending a pinned certificate to a rogue
/// chain gains nothing.
public struct TrustPolicy: Sendable {
    /// What is checked beyond the chain; the raw values are the config's `mode`.
    public enum Mode: String, Sendable, CaseIterable {
        /// Chain and host only.
        case `default`
        /// SPKI SHA-256 pins (`pins`).
        case publicKey = "public-key"
        /// Exact certificates (`certificates`).
        case certificate
        /// Nothing is checked. Logged loudly by whoever configures it.
        case disabled
    }

    /// What is checked beyond the chain.
    public var mode: Mode
    /// The pins of `publicKey` mode.
    public var pins: Set<PublicKeyPin>
    /// The certificates of `certificate` mode.
    public var certificates: [Certificate]
    /// Validate the chain to a trust anchor (AFNetworking's `!allowInvalidCertificates`).
    public var validateChain: Bool
    /// Check that the leaf names the host (AFNetworking's `validatesDomainName`).
    public var validateHost: Bool
    /// The pinned certificates become the only anchors (self-signed servers).
    public var acceptSelfSigned: Bool
    /// Anchors beside the system's roots.
    public var anchors: [Certificate]
    /// OCSP checking of the validated chain; nil: none.
    public var revocation: RevocationTrustEvaluator.Mode?
    /// The longest one OCSP responder may take.
    public var revocationTimeout: TimeAmount
    /// Apple's ATS baseline (TLS 1.2+, forward secrecy, SHA-256+ signatures, RSA ≥ 2048 / EC ≥ 256).
    public var requiresTLSBaseline: Bool

    /// - Throws: `TrustPolicyError` for combinations that cannot protect anything.
    public init(
        mode: Mode = .default, pins: Set<PublicKeyPin> = [], certificates: [Certificate] = [],
        validateChain: Bool = true, validateHost: Bool = true, acceptSelfSigned: Bool = false,
        anchors: [Certificate] = [], revocation: RevocationTrustEvaluator.Mode? = nil, revocationTimeout: TimeAmount = .seconds(5),
        requiresTLSBaseline: Bool = false
    ) throws(TrustPolicyError) {
        switch mode {
        case .publicKey where pins.isEmpty:
            throw TrustPolicyError("public-key pinning needs at least one pin")
        case .certificate where certificates.isEmpty:
            throw TrustPolicyError("certificate pinning needs at least one certificate")
        case .default where !validateChain && validateHost:
            throw TrustPolicyError(
                "allowing invalid certificates while validating the host name without pinning protects nothing: you must use pinning")
        case .default where acceptSelfSigned, .publicKey where acceptSelfSigned:
            throw TrustPolicyError("accept-self-signed makes the pinned certificates the anchors: it needs certificate pinning")
        case _ where revocation != nil && !validateChain:
            throw TrustPolicyError("revocation is checked along the validated chain: it needs validate-chain = true")
        default:
            break
        }
        self.mode = mode
        self.pins = pins
        self.certificates = certificates
        self.validateChain = validateChain
        self.validateHost = validateHost
        self.acceptSelfSigned = acceptSelfSigned
        self.anchors = anchors
        self.revocation = revocation
        self.revocationTimeout = revocationTimeout
        self.requiresTLSBaseline = requiresTLSBaseline
    }

    /// Builds the host's evaluator, in the order the checks must run: the chain
    /// (which establishes the validated chain the pins are matched against), the
    /// pins, then revocation and the TLS baseline.
    public func evaluator(systemAnchors: [Certificate]) -> CompositeTrustEvaluator {
        if mode == .disabled { return CompositeTrustEvaluator([DisabledTrustEvaluator()]) }
        var evaluators: [any ServerTrustEvaluator] = []
        if validateChain {
            let roots = acceptSelfSigned ? certificates : systemAnchors + anchors + (mode == .certificate ? certificates : [])
            evaluators.append(
                DefaultTrustEvaluator(
                    anchors: roots, validateHost: validateHost,
                    profile: acceptSelfSigned ? .pinnedAnchors : .webPKI))
        } else if validateHost {
            evaluators.append(HostNameTrustEvaluator())
        }
        switch mode {
        case .publicKey: evaluators.append(PublicKeysTrustEvaluator(pins: pins))
        case .certificate: evaluators.append(PinnedCertificatesTrustEvaluator(certificates: certificates))
        case .default, .disabled: break
        }
        if let revocation { evaluators.append(RevocationTrustEvaluator(mode: revocation, timeout: revocationTimeout)) }
        if requiresTLSBaseline { evaluators.append(TLSPolicyEvaluator()) }
        return CompositeTrustEvaluator(evaluators)
    }

    /// Judges the chain a server presented (leaf first) for `host`, at `time` (nil: now),
    /// with `systemAnchors` as the trusted roots unless self-signed certificates are accepted.
    /// `connection` is what the handshake negotiated, for the TLS baseline.
    public func evaluate(
        _ presented: [Certificate], host: String, systemAnchors: [Certificate],
        at time: Date? = nil, connection: NegotiatedTLS? = nil
    ) async -> TrustEvaluation {
        var context = ServerTrustContext(host: host, presented: presented, connection: connection, validationTime: time)
        return await evaluator(systemAnchors: systemAnchors).evaluate(&context)
    }
}

/// A trust policy that cannot work, and why.
public struct TrustPolicyError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}
