import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#endif

/// The leaf is valid for the host asked for (RFC 9525): a DNS name matches a
/// subject alternative dNSName — exactly, or through a wildcard that is a whole
/// left-most label over a registrable domain (a wildcard over a public suffix is
/// ignored) — and an IP address matches an iPAddress entry. The common name is
/// never used. The name asked for must also satisfy the chain's DNS name
/// constraints, which closes the gap between a permitted wildcard and an
/// excluded name (CVE-2025-61727).
struct ServerNamePolicy: VerifierPolicy {
    let host: String
    let publicSuffixes: PublicSuffixList
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.subjectAlternativeName]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let names = Array((try? chain.leaf.extensions.subjectAlternativeNames) ?? nil ?? SubjectAlternativeNames())
        if let address = Self.addressBytes(host) {
            let matches = names.contains { name in
                if case let .ipAddress(octets) = name { return Array(octets.bytes) == address }
                return false
            }
            return matches ? .meetsPolicy : .failsToMeetPolicy(reason: "the certificate is not valid for \(host)")
        }
        let wanted = Self.normalized(host)
        let matches = names.contains { name in
            guard case let .dnsName(candidate) = name else { return false }
            return matchesDNSName(Self.normalized(candidate), wanted)
        }
        guard matches else { return .failsToMeetPolicy(reason: "the certificate is not valid for \(host)") }
        // The name asked for, not only the certificate's wildcard, is held to the constraints.
        for authority in chain.authorities {
            guard let constraints = (try? authority.extensions.nameConstraints) ?? nil,
                let violation = NameConstraintsPolicy.violation(of: constraints, by: .dnsName(wanted))
            else { continue }
            return .failsToMeetPolicy(reason: "\(violation) (name constraints of \(authority.subject))")
        }
        return .meetsPolicy
    }

    private func matchesDNSName(_ candidate: String, _ wanted: String) -> Bool {
        guard candidate.hasPrefix("*.") else { return candidate == wanted }
        let base = String(candidate.dropFirst(2))
        guard !base.contains("*"), !publicSuffixes.isPublicSuffix(base),
            let dot = wanted.firstIndex(of: "."), dot != wanted.startIndex
        else { return false }
        return wanted[wanted.index(after: dot)...] == base
    }

    static func normalized(_ name: String) -> String {
        let lower = name.lowercased()
        return lower.hasSuffix(".") ? String(lower.dropLast()) : lower
    }

    /// The bytes of an IPv4 (dotted quad, strictly) or IPv6 literal; nil for a DNS name.
    static func addressBytes(_ host: String) -> [UInt8]? {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var buffer = [UInt8](repeating: 0, count: 16)
        if text.contains(":") { return inet_pton(AF_INET6, text, &buffer) == 1 ? buffer : nil }
        guard text.split(separator: ".").count == 4, text.allSatisfy({ $0.isNumber || $0 == "." }) else { return nil }
        return inet_pton(AF_INET, text, &buffer) == 1 ? Array(buffer.prefix(4)) : nil
    }

    /// The canonical text of an iPAddress entry (dotted quad, RFC 5952).
    static func addressText(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        var text = [CChar](repeating: 0, count: 64)
        guard inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, bytes, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
