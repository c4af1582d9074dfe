import NIOCore
import NIOSSL
import SwiftASN1
import X509

/// A host's `[[trust.host]]` policy as far as a `TLSConfiguration` alone can carry
/// it: for HTTP clients that take a `TLSConfiguration` and offer no verification
/// callback — AsyncHTTPClient among them (its issue #285) — so that an app's own
/// requests get the strongest part of reachd's policy that exists without forking
/// its client.
///
/// ```swift
/// import AsyncHTTPClient
/// import ServerTrust
///
/// let trust = try TrustConfiguration.load(contentsOf: "/etc/reachd/reachd.toml")
/// let policy = try ClientTLSPolicy(configuration: trust, host: "api.example.com", anchorsOnly: true)
/// for gap in policy.notEnforced { print("TLS for api.example.com: \(gap)") }
/// let client = HTTPClient(configuration: .init(tlsConfiguration: policy.tlsConfiguration))
/// ```
///
/// What it carries: the host's `anchors` (beside the system's roots, or — with
/// `anchorsOnly` — as the only roots: a CA pin any TLS stack enforces), pinned
/// self-signed certificates as the only roots, host-name checking, and the ATS
/// baseline's protocol and cipher suites. What it cannot: public-key pins,
/// certificate pins of CA-issued certificates, OCSP, the baseline's key-size
/// and signature rules — each named in ``notEnforced``; for those, connect with
/// NIOSSL and ``ServerTrustVerifier/callback`` (docs/trust.md, "Your own requests").
public struct ClientTLSPolicy: Sendable {
    /// The configuration to hand to the HTTP client.
    public let tlsConfiguration: TLSConfiguration
    /// What of the host's policy the configuration enforces, in words.
    public let enforced: [String]
    /// What of the host's policy it cannot enforce, in words: empty when the
    /// configuration carries the whole policy.
    public let notEnforced: [String]

    /// Why no configuration can be given: one that enforced less than the chain
    /// check the policy still relies on would be weaker than the client's default.
    public struct Refusal: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The policy of `host` (its `[[trust.host]]` entry, else the default evaluation).
    ///
    /// - Parameters:
    ///   - configuration: The trust configuration (`[trust]` of reachd.toml).
    ///   - host: The host the requests go to.
    ///   - anchorsOnly: With anchors configured, trust only them — not the system's
    ///     roots beside them: a CA pin. Without anchors it changes nothing.
    /// - Throws: ``Refusal`` when the policy turns chain validation off (`mode = "disabled"`,
    ///   `validate-chain = false`): without a callback, nothing would stand in for it.
    public init(configuration: TrustConfiguration, host: String, anchorsOnly: Bool = false) throws(Refusal) {
        var tls = TLSConfiguration.makeClientConfiguration()
        var enforced: [String] = []
        var notEnforced: [String] = []
        guard let entry = configuration.hosts.lookup(host)?.value else {
            self.init(
                tls, enforced: ["the chain to the system's roots and the host name (no [[trust.host]] entry matches \(host))"],
                notEnforced: [])
            return
        }
        let policy = entry.policy
        guard policy.mode != .disabled, policy.validateChain || (policy.mode == .certificate && policy.acceptSelfSigned) else {
            throw Refusal(
                description: "the policy of \(host) does not validate the chain: only a verification callback can replace that check")
        }
        if !policy.validateHost {
            tls.certificateVerification = .noHostnameVerification
            enforced.append("the chain (the host name is not checked, as configured)")
        } else {
            enforced.append("the chain and the host name")
        }
        let anchors = policy.anchors.compactMap { try? NIOSSLCertificate(bytes: Self.der($0), format: .der) }
        if policy.mode == .certificate && policy.acceptSelfSigned {
            tls.trustRoots = .certificates(policy.certificates.compactMap { try? NIOSSLCertificate(bytes: Self.der($0), format: .der) })
            enforced.append("the pinned self-signed certificates as the only roots")
        } else if !anchors.isEmpty {
            if anchorsOnly {
                tls.trustRoots = .certificates(anchors)
                enforced.append("the configured anchors as the only roots (\(anchors.count))")
            } else {
                tls.additionalTrustRoots = [.certificates(anchors)]
                enforced.append("the configured anchors beside the system's roots (\(anchors.count))")
            }
        }
        switch policy.mode {
        case .publicKey:
            notEnforced.append("public-key pins (\(policy.pins.count)): a TLSConfiguration has no verification callback")
        case .certificate where !policy.acceptSelfSigned:
            notEnforced.append("certificate pins (\(policy.certificates.count)): a TLSConfiguration has no verification callback")
        default:
            break
        }
        if policy.revocation != nil { notEnforced.append("OCSP revocation checking") }
        if policy.requiresTLSBaseline {
            ServerTrustVerifier.applyTLSBaseline(to: &tls)
            enforced.append("TLS 1.2 or later with forward-secret cipher suites (the ATS baseline)")
            notEnforced.append("the ATS baseline's key sizes and SHA-256+ signatures")
        }
        self.init(tls, enforced: enforced, notEnforced: notEnforced)
    }

    private init(_ tlsConfiguration: TLSConfiguration, enforced: [String], notEnforced: [String]) {
        self.tlsConfiguration = tlsConfiguration
        self.enforced = enforced
        self.notEnforced = notEnforced
    }

    private static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        try? serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
