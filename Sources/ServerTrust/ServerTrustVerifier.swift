import FoundationEssentials
import NIOCore
import NIOSSL
import X509

/// The same policy, enforced by an app on its own NIO TLS connections: a ready
/// verification callback for `NIOSSLClientHandler`. The chain is judged exactly
/// as reachd judges it (``TrustChecker/verify(_:host:at:)``): the host's
/// `[[trust.host]]` entry, pin expiry, report-only pin sets.
///
/// ```swift
/// import NIOSSL
/// import ServerTrust
///
/// let trust = try TrustConfiguration.load(contentsOf: "/etc/reachd/reachd.toml")
/// let verifier = ServerTrustVerifier(configuration: trust, host: "api.example.com") { result in
///     if result.verdict != .trusted { print("TLS: \(result.verdict.rawValue): \(result.reason)") }
/// }
/// var tls = TLSConfiguration.makeClientConfiguration()
/// ServerTrustVerifier.applyTLSBaseline(to: &tls)
/// let context = try NIOSSLContext(configuration: tls)
/// let handler = try NIOSSLClientHandler(context: context, serverHostname: "api.example.com",
///                                       customVerificationCallbackWithMetadata: verifier.callback)
/// ```
public struct ServerTrustVerifier: Sendable {
    /// The checker whose configuration judges the handshake.
    public let checker: TrustChecker
    /// The host the connection is for.
    public let host: String
    let onResult: (@Sendable (HostTrustResult) -> Void)?

    /// - Parameters:
    ///   - configuration: the host table (and nothing else of it is used).
    ///   - host: the name the connection is for — the SNI name, checked against the certificate.
    ///   - systemAnchors: the trusted roots; nil reads the system's bundle (an empty list when it cannot be read).
    ///   - onResult: called with every judgement, failures included, before the handshake goes on or fails.
    public init(
        configuration: TrustConfiguration, host: String, systemAnchors: [Certificate]? = nil,
        onResult: (@Sendable (HostTrustResult) -> Void)? = nil
    ) {
        checker = TrustChecker(
            configuration: configuration,
            systemAnchors: systemAnchors ?? (try? ChainValidator.systemAnchors()) ?? [])
        self.host = host
        self.onResult = onResult
    }

    /// The callback for `NIOSSLClientHandler(…, customVerificationCallbackWithMetadata:)`.
    /// It replaces NIOSSL's own verification entirely, names included.
    public var callback: NIOSSLCustomVerificationCallbackWithMetadata {
        { [checker, host, onResult] certificates, promise in
            let chain = certificates.compactMap { try? Certificate(derEncoded: $0.toDERBytes()) }
            let complete = chain.count == certificates.count
            Task {
                var result = await checker.verify(chain, host: host)
                if !complete {
                    (result.verdict, result.reason) = (
                        .chainInvalid, "a presented certificate cannot be used (RSA keys below 2048 bits are refused)"
                    )
                }
                onResult?(result)
                if result.allowsConnection {
                    promise.succeed(.certificateVerified(VerificationMetadata(nil)))
                } else {
                    promise.succeed(.failed)
                }
            }
        }
    }

    /// Makes a client configuration offer only what the ATS baseline allows:
    /// TLS 1.2 or later and forward-secret cipher suites.
    public static func applyTLSBaseline(to configuration: inout TLSConfiguration) {
        configuration.minimumTLSVersion = .tlsv12
        configuration.cipherSuiteValues = TLSPolicyEvaluator.forwardSecretCipherSuites
    }
}
