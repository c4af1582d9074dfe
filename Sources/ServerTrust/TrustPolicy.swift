import FoundationEssentials
import X509

/// How one host's certificates are judged: AFSecurityPolicy's and Alamofire's
/// model. The default evaluation validates the chain to the system's roots (plus
/// `anchors`) and the host name; pinning then requires a pinned key or
/// certificate in the chain that was *validated* — which may end at a pinned
/// root the server never sent — so appending a pinned certificate to a rogue
/// chain gains nothing.
public struct TrustPolicy: Sendable {
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

    public var mode: Mode
    public var pins: Set<PublicKeyPin>
    public var certificates: [Certificate]
    /// Validate the chain to a trust anchor (AFNetworking's `!allowInvalidCertificates`).
    public var validateChain: Bool
    public var validateHost: Bool
    /// The pinned certificates become the only anchors (self-signed servers).
    public var acceptSelfSigned: Bool
    /// Anchors beside the system's roots.
    public var anchors: [Certificate]

    /// - Throws: `TrustPolicyError` for combinations that cannot protect anything.
    public init(mode: Mode = .default, pins: Set<PublicKeyPin> = [], certificates: [Certificate] = [],
                validateChain: Bool = true, validateHost: Bool = true, acceptSelfSigned: Bool = false,
                anchors: [Certificate] = []) throws(TrustPolicyError) {
        switch mode {
        case .publicKey where pins.isEmpty:
            throw TrustPolicyError("public-key pinning needs at least one pin")
        case .certificate where certificates.isEmpty:
            throw TrustPolicyError("certificate pinning needs at least one certificate")
        case .default where !validateChain && validateHost:
            throw TrustPolicyError("allowing invalid certificates while validating the host name without pinning protects nothing: you must use pinning")
        case .default where acceptSelfSigned, .publicKey where acceptSelfSigned:
            throw TrustPolicyError("accept-self-signed makes the pinned certificates the anchors: it needs certificate pinning")
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
    }

    /// Judges the chain a server presented (leaf first) for `host`, at `time` (nil: now),
    /// with `systemAnchors` as the trusted roots unless self-signed certificates are accepted.
    public func evaluate(_ presented: [Certificate], host: String, systemAnchors: [Certificate],
                         at time: Date? = nil) async -> TrustEvaluation {
        if mode == .disabled { return TrustEvaluation(.trusted, "trust evaluation is disabled for \(host)") }
        let roots = acceptSelfSigned ? certificates : systemAnchors + anchors + (mode == .certificate ? certificates : [])
        var chain = presented
        if validateChain {
            let validator = ChainValidator(anchors: roots, validationTime: time,
                                           profile: acceptSelfSigned ? .pinnedAnchors : .webPKI)
            switch await validator.validate(presented, host: validateHost ? host : nil) {
            case let .trusted(validated): chain = validated
            case let .untrusted(evaluation): return evaluation
            }
        } else if validateHost {
            guard let leaf = presented.first, await ChainValidator.leaf(leaf, isValidFor: host) else {
                return TrustEvaluation(.hostMismatch, "the certificate is not valid for \(host)")
            }
        }
        switch mode {
        case .default, .disabled:
            return TrustEvaluation(.trusted, "the chain is valid for \(host)")
        case .publicKey:
            let chainPins = chain.compactMap { try? PublicKeyPin(certificate: $0) }
            guard let matched = chainPins.first(where: pins.contains) else {
                return TrustEvaluation(.pinMismatch, "no key of the \(validateChain ? "validated" : "presented") chain is pinned (\(chainPins.map(\.description).joined(separator: ", ")))")
            }
            return TrustEvaluation(.trusted, "pinned key \(matched) is in the chain")
        case .certificate:
            guard chain.contains(where: certificates.contains) else {
                return TrustEvaluation(.pinMismatch, "no certificate of the chain is pinned")
            }
            return TrustEvaluation(.trusted, "a pinned certificate is in the chain")
        }
    }
}

/// A trust policy that cannot work, and why.
public struct TrustPolicyError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}
