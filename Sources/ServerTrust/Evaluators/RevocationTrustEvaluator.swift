import FoundationEssentials
import NIOCore
@_spi(FixedExpiryValidationTime) import X509

/// Revocation through OCSP (RFC 6960), with swift-certificates' OCSP policy over
/// the validated chain. Soft-fail (what browsers do): a responder that cannot be
/// reached, or an answer that cannot be used, passes; only a signed "revoked"
/// fails. Hard-fail: anything but a signed "good" fails.
public struct RevocationTrustEvaluator: ServerTrustEvaluator {
    /// How an OCSP answer that is missing or unusable counts; the raw values are the config's.
    public enum Mode: String, Sendable, CaseIterable {
        /// Only a signed "revoked" fails.
        case soft = "ocsp-soft"
        /// Anything but a signed "good" fails.
        case hard = "ocsp-hard"
    }

    /// Soft- or hard-fail.
    public var mode: Mode
    /// The longest one responder may take.
    public var timeout: TimeAmount

    /// An OCSP check of every certificate of the chain but the anchor.
    ///
    /// - Parameters:
    ///   - mode: Soft- or hard-fail.
    ///   - timeout: The longest one responder may take.
    public init(mode: Mode, timeout: TimeAmount = .seconds(5)) {
        self.mode = mode
        self.timeout = timeout
    }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        // OCSP needs each certificate's issuer: the validated chain, ending at its anchor.
        guard let chain = context.validated, let anchor = chain.last else {
            return TrustEvaluation(.revoked, "revocation cannot be checked on a chain that was not validated")
        }
        let requester = OCSPHTTPRequester(hardFail: mode == .hard, timeout: timeout)
        let failureMode: OCSPFailureMode = mode == .hard ? .hard : .soft
        // The verifier rebuilds the same chain; the RFC 5280 policies are there because a
        // verifier rejects, without a reason, critical extensions no policy claims.
        let time = context.validationTime ?? Date()
        var verifier = Verifier(rootCertificates: CertificateStore([anchor])) {
            RFC5280PathPolicy(validationTime: time)
            NameConstraintsPolicy()
            OCSPVerifierPolicy(failureMode: failureMode, requester: requester, fixedExpiryValidationTime: time)
        }
        switch await verifier.validate(leaf: chain[0], intermediates: CertificateStore(chain.dropFirst().dropLast())) {
        case .validCertificate:
            return TrustEvaluation(.trusted, mode == .hard ? "OCSP: not revoked" : "OCSP: not known to be revoked")
        case let .couldNotValidate(failures):
            let reasons = failures.map { "\($0.policyFailureReason)" }
            let reason = reasons.first { $0.contains("revoked") } ?? reasons.first ?? "no chain"
            return TrustEvaluation(
                .revoked,
                reason.contains("revoked")
                    ? reason
                    : "revocation status not confirmed (\(reason)); \(mode.rawValue) treats that as revoked")
        }
    }
}

/// Queries an OCSP responder over HTTP POST. A responder that cannot be reached
/// is a terminal error only in hard-fail mode: swift-certificates lets a
/// non-terminal error pass even under `.hard`.
struct OCSPHTTPRequester: OCSPRequester {
    let hardFail: Bool
    let timeout: TimeAmount

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        do {
            let answer = try await HTTPExchange(url: uri, body: request, contentType: "application/ocsp-request", timeout: timeout).send()
            return .response(answer)
        } catch {
            let failure = HTTPExchange.Failure(description: "OCSP responder \(uri): \(TLSProbe.describe(error))")
            return hardFail ? .terminalError(failure) : .nonTerminalError(failure)
        }
    }
}
