import FoundationEssentials
import NIOSSL
import X509

/// What the evaluators of one connection look at: what the server presented,
/// what the handshake negotiated, and what earlier evaluators established.
public struct ServerTrustContext: Sendable {
    /// The DNS name or IP address the client asked for.
    public var host: String
    /// The chain as the server sent it, leaf first.
    public var presented: [Certificate]
    /// What the handshake negotiated; nil when judging a saved chain.
    public var connection: NegotiatedTLS?
    /// When to judge at; nil: now.
    public var validationTime: Date?
    /// The chain as validated to an anchor, leaf first; nil until chain validation ran.
    public internal(set) var validated: [Certificate]?

    /// What evaluators judge: a host's presented chain, and the handshake when there was one.
    public init(host: String, presented: [Certificate], connection: NegotiatedTLS? = nil, validationTime: Date? = nil) {
        self.host = host
        self.presented = presented
        self.connection = connection
        self.validationTime = validationTime
    }

    /// The chain pins are matched against: the validated one when the chain was
    /// validated (so appending a pinned certificate gains nothing), else what was sent.
    public var chain: [Certificate] { validated ?? presented }
}

/// What a TLS handshake negotiated.
public struct NegotiatedTLS: Sendable, Equatable {
    /// The protocol version; nil when the handshake did not say.
    public var version: TLSVersion?
    /// true: an ephemeral key exchange; nil: the client offered both kinds and cannot tell.
    public var forwardSecret: Bool?

    /// What a handshake negotiated.
    public init(version: TLSVersion?, forwardSecret: Bool?) {
        self.version = version
        self.forwardSecret = forwardSecret
    }
}

/// One check of a server's trust, in the style of Alamofire's `ServerTrustEvaluating`:
/// small values composed into a host's policy. Each answers with a verdict and
/// its reason, never a bare Bool.
public protocol ServerTrustEvaluator: Sendable {
    /// `.trusted` when the check passes; any other verdict stops the evaluation.
    func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation
}

/// Runs evaluators in order; the first that does not trust decides.
public struct CompositeTrustEvaluator: ServerTrustEvaluator {
    /// The evaluators, in the order they run.
    public let evaluators: [any ServerTrustEvaluator]

    /// An evaluator running `evaluators` in order.
    public init(_ evaluators: [any ServerTrustEvaluator]) { self.evaluators = evaluators }

    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        var reasons: [String] = []
        for evaluator in evaluators {
            let evaluation = await evaluator.evaluate(&context)
            guard evaluation.verdict == .trusted else { return evaluation }
            reasons.append(evaluation.reason)
        }
        return TrustEvaluation(.trusted, reasons.isEmpty ? "nothing to check" : reasons.joined(separator: "; "))
    }
}

/// Trusts everything. Whoever configures it must say so loudly (reachd logs it at start).
public struct DisabledTrustEvaluator: ServerTrustEvaluator {
    /// The evaluator that trusts everything.
    public init() {}
    public func evaluate(_ context: inout ServerTrustContext) async -> TrustEvaluation {
        TrustEvaluation(.trusted, "trust evaluation is disabled for \(context.host)")
    }
}
