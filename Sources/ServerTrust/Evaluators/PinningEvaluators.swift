import X509

/// Public-key pinning: some key of the chain has one of the pins.
public struct PublicKeysTrustEvaluator: ServerTrustEvaluator {
    /// The accepted keys' pins; one match in the chain is enough.
    public let pins: Set<PublicKeyPin>

    /// An evaluator accepting a chain with a key of `pins`.
    public init(pins: Set<PublicKeyPin>) { self.pins = pins }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        let chainPins = context.chain.compactMap { try? PublicKeyPin(certificate: $0) }
        guard let matched = chainPins.first(where: pins.contains) else {
            let which = context.validated == nil ? "presented" : "validated"
            return TrustEvaluation(
                .pinMismatch, "no key of the \(which) chain is pinned (\(chainPins.map(\.description).joined(separator: ", ")))")
        }
        return TrustEvaluation(.trusted, "pinned key \(matched) is in the chain")
    }
}

/// Certificate pinning: some certificate of the chain is one of `certificates`, byte for byte.
public struct PinnedCertificatesTrustEvaluator: ServerTrustEvaluator {
    /// The accepted certificates.
    public let certificates: [Certificate]

    /// An evaluator accepting a chain that contains one of `certificates`.
    public init(certificates: [Certificate]) { self.certificates = certificates }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        guard context.chain.contains(where: certificates.contains) else {
            return TrustEvaluation(.pinMismatch, "no certificate of the chain is pinned")
        }
        return TrustEvaluation(.trusted, "a pinned certificate is in the chain")
    }
}
