import X509

/// Public-key pinning: some key of the chain has one of the pins.
public struct PublicKeysTrustEvaluator: ServerTrustEvaluator {
    public let pins: Set<PublicKeyPin>

    public init(pins: Set<PublicKeyPin>) { self.pins = pins }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        let chainPins = context.chain.compactMap { try? PublicKeyPin(certificate: $0) }
        guard let matched = chainPins.first(where: pins.contains) else {
            let which = context.validated == nil ? "presented" : "validated"
            return TrustEvaluation(.pinMismatch, "no key of the \(which) chain is pinned (\(chainPins.map(\.description).joined(separator: ", ")))")
        }
        return TrustEvaluation(.trusted, "pinned key \(matched) is in the chain")
    }
}

/// Certificate pinning: some certificate of the chain is one of `certificates`, byte for byte.
public struct PinnedCertificatesTrustEvaluator: ServerTrustEvaluator {
    public let certificates: [Certificate]

    public init(certificates: [Certificate]) { self.certificates = certificates }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        guard context.chain.contains(where: certificates.contains) else {
            return TrustEvaluation(.pinMismatch, "no certificate of the chain is pinned")
        }
        return TrustEvaluation(.trusted, "a pinned certificate is in the chain")
    }
}
