import X509

/// The default evaluation: the chain leads to one of `anchors` under RFC 5280
/// and the web PKI rules, and (optionally) the leaf is valid for the host.
public struct DefaultTrustEvaluator: ServerTrustEvaluator {
    public var anchors: [Certificate]
    public var validateHost: Bool
    public var profile: ChainValidator.Profile

    public init(anchors: [Certificate], validateHost: Bool = true, profile: ChainValidator.Profile = .webPKI) {
        self.anchors = anchors
        self.validateHost = validateHost
        self.profile = profile
    }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        let validator = ChainValidator(anchors: anchors, validationTime: context.validationTime, profile: profile)
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
    public init() {}
    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        guard let leaf = context.presented.first, await ChainValidator.leaf(leaf, isValidFor: context.host) else {
            return TrustEvaluation(.hostMismatch, "the certificate is not valid for \(context.host)")
        }
        return TrustEvaluation(.trusted, "the certificate is valid for \(context.host)")
    }
}
