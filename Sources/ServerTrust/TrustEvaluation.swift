@_exported import TrustVocabulary

/// A verdict with the reason behind it, in words a user can act on.
public struct TrustEvaluation: Sendable, Equatable, CustomStringConvertible {
    /// What was found.
    public var verdict: TrustVerdict
    /// Why.
    public var reason: String

    /// A verdict and its reason.
    public init(_ verdict: TrustVerdict, _ reason: String) {
        self.verdict = verdict
        self.reason = reason
    }

    public var description: String { "\(verdict.rawValue): \(reason)" }
}
