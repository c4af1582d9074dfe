import X509

/// The default evaluation: the chain leads to one of `anchors` under RFC 5280
/// and the web PKI rules, and (optionally) the leaf is valid for the host.
public struct DefaultTrustEvaluator: ServerTrustEvaluator {
    /// Whether the leaf must be valid for the host name (on by default).
    public let validateHost: Bool
    private let validator: ChainValidator

    /// An evaluator validating against `anchors`.
    ///
    /// - Parameters:
    ///   - anchors: The trust anchors.
    ///   - validateHost: Whether the leaf must also name the host.
    ///   - profile: The web PKI's rules, or RFC 5280 alone.
    public init(anchors: [Certificate], validateHost: Bool = true, profile: ChainValidator.Profile = .webPKI) {
        self.validateHost = validateHost
        validator = ChainValidator(anchors: anchors, profile: profile)
    }

    /// The trust anchors chains must lead to.
    public var anchors: [Certificate] { validator.anchors }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        var validator = validator
        validator.validationTime = context.validationTime
        switch await validator.validate(context.presented, host: validateHost ? context.host : nil) {
        case let .trusted(chain):
            context.validated = chain
            return TrustEvaluation(.trusted, validateHost ? "the chain is valid for \(context.host)" : "the chain is valid")
        case let .untrusted(evaluation):
            return evaluation
        }
    }
}

/// The host-name check alone, for policies that do not validate the chain.
public struct HostNameTrustEvaluator: ServerTrustEvaluator {
    /// The host-name check.
    public init() {}
    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        guard let leaf = context.presented.first, await ChainValidator.leaf(leaf, isValidFor: context.host) else {
            return TrustEvaluation(.hostMismatch, "the certificate is not valid for \(context.host)")
        }
        return TrustEvaluation(.trusted, "the certificate is valid for \(context.host)")
    }
}
