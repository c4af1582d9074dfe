import FoundationEssentials
import SwiftASN1
import X509

/// RFC 5280's path checks (6.1.3–6.1.4) but name constraints: version, validity
/// period, basic constraints and path length — what swift-certificates'
/// `RFC5280Policy` checks, whose name-constraint step cannot be left out and
/// rejects any chain with a directoryName or otherName constraint, and
/// constrains self-issued intermediates, which RFC 5280 exempts.
/// ``NameConstraintsPolicy`` does that step.
struct RFC5280PathPolicy: VerifierPolicy {
    /// When the chain is judged; whole seconds, as certificates count them.
    let validationTime: Date

    // Key usage is not checked for CAs (browsers, Go and webpki do not either:
    // too many CAs get it wrong), but it is understood, so it may be critical.
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [
        .X509ExtensionID.basicConstraints, .X509ExtensionID.keyUsage
    ]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        for certificate in chain {
            if let problem = versionOrValidityProblem(certificate) {
                return .failsToMeetPolicy(reason: "\(certificate.subject): \(problem)")
            }
        }
        return basicConstraintsVerdict(chain)
    }

    private func versionOrValidityProblem(_ certificate: Certificate) -> String? {
        if certificate.version == .v1 && !certificate.extensions.isEmpty {
            return "a version 1 certificate with extensions"
        }
        if certificate.notValidBefore > certificate.notValidAfter { return "its validity period ends before it begins" }
        if validationTime < certificate.notValidBefore { return "not valid before \(certificate.notValidBefore.formatted(.iso8601))" }
        if validationTime > certificate.notValidAfter { return "expired at \(certificate.notValidAfter.formatted(.iso8601))" }
        return nil
    }

    /// Every certificate above the leaf is a CA (version 1 ones are let be, as
    /// RFC 5280 6.1.4 (k) does); a path length counts the non-self-issued
    /// intermediates below the CA. A leaf that is its own anchor must be a CA.
    private func basicConstraintsVerdict(_ chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let leaf = chain.leaf
        if chain.count == 1 && leaf.version != .v1 {
            guard case .isCertificateAuthority = try? leaf.extensions.basicConstraints else {
                return .failsToMeetPolicy(reason: "\(leaf.subject): a trust anchor that is not a CA certificate")
            }
            return .meetsPolicy
        }
        var intermediatesBelow = 0
        for authority in chain.authorities {
            if authority.version != .v1 {
                let constraints: BasicConstraints?
                do { constraints = try authority.extensions.basicConstraints } catch {
                    return .failsToMeetPolicy(reason: "\(authority.subject): unreadable basic constraints: \(error)")
                }
                switch constraints {
                case let .isCertificateAuthority(maximum?) where maximum < intermediatesBelow:
                    let found = intermediatesBelow
                    return .failsToMeetPolicy(
                        reason: "\(authority.subject) allows \(maximum) intermediates below it, the chain has \(found)")
                case .isCertificateAuthority:
                    break
                case .notCertificateAuthority, nil:
                    return .failsToMeetPolicy(reason: "\(authority.subject) issued a certificate but is not a CA certificate")
                }
            }
            if authority.subject != authority.issuer { intermediatesBelow += 1 }
        }
        return .meetsPolicy
    }
}
