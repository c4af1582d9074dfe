import Crypto
import Foundation
import NIOSSL
import ServerTrust
import TestTraits
import Testing
import X509
import _CryptoExtras

@Suite("ATS baseline (servers on 127.0.0.1)", .ownThreads)
struct TLSPolicyTests {
    let root: TestAuthority

    init() throws { root = try .root("ATS Root") }

    /// Checks `localhost` on `server` with the TLS baseline on or off.
    func check(_ server: TestTLSServer, baseline: Bool = true) async throws -> HostTrustResult {
        var configuration = TrustConfiguration()
        // A bound, not a measure: a debug build's handshake on a loaded two-CPU machine took over 3 s once.
        configuration.timeout = .seconds(10)
        try configuration.hosts.add(
            try HostPattern("localhost"),
            HostTrustConfiguration(
                pattern: try HostPattern("localhost"), port: server.port, connect: "127.0.0.1",
                policy: try TrustPolicy(requiresTLSBaseline: baseline)))
        let checker = TrustChecker(configuration: configuration, systemAnchors: [root.certificate])
        return await checker.checkAll(at: TestAuthority.now).hosts[0]
    }

    @Test("TLS 1.3 and TLS 1.2 with ECDHE pass")
    func modernServers() async throws {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let leaf = try root.leaf(["localhost"], key: key)
        for maximum in [TLSVersion.tlsv13, .tlsv12] {
            let server = try await TestTLSServer(chain: [leaf], privateKey: key, maximumTLSVersion: maximum)
            let result = try await check(server)
            await server.close()
            #expect(result.verdict == .trusted, "\(result.reason)")
            #expect(result.tlsVersion == maximum)
        }
    }

    @Test("a TLS 1.0-only server fails the baseline, and says what it negotiated")
    func tls10Only() async throws {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let server = try await TestTLSServer(
            chain: [try root.leaf(["localhost"], key: key)], privateKey: key,
            minimumTLSVersion: .tlsv1, maximumTLSVersion: .tlsv1)
        defer { Task { await server.close() } }
        let result = try await check(server)
        #expect(result.verdict == .tlsPolicy)
        #expect(result.reason.contains("TLS 1.0"), "\(result.reason)")
        #expect(result.tlsVersion == .tlsv1)
        // Without the baseline the same server is trusted.
        #expect(try await check(server, baseline: false).verdict == .trusted)
    }

    @Test("a server with a 1024-bit RSA key (openssl s_server) is chain-invalid, with the reason")
    func weakServerKey() async throws {
        let scratch = try OpenSSLScratch()
        try scratch.shell(
            "openssl req -x509 -newkey rsa:1024 -nodes -keyout weak.key -out weak.pem -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost"
        )
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let server = try await scratch.startListening(
            [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", "weak.pem", "-key", "weak.key",
                "-quiet", "-cipher", "DEFAULT:@SECLEVEL=0"
            ], port: port)
        defer { scratch.stop(server) }
        var configuration = TrustConfiguration()
        configuration.timeout = .seconds(10)
        let checker = TrustChecker(configuration: configuration, systemAnchors: [root.certificate])
        let result = await checker.check("localhost", port: port, connectingTo: "127.0.0.1")
        #expect(result.verdict == .chainInvalid)
        #expect(result.reason.contains("2048"), "\(result.reason)")
    }

    @Test("a server without forward secrecy (static RSA key exchange) fails the baseline")
    func staticRSAKeyExchange() async throws {
        let key = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        let server = try await TestTLSServer(
            chain: [try root.leaf(["localhost"], key: key)], privateKey: key,
            maximumTLSVersion: .tlsv12, cipherSuites: TLSPolicyEvaluator.staticKeyCipherSuites)
        defer { Task { await server.close() } }
        let result = try await check(server)
        #expect(result.verdict == .tlsPolicy)
        #expect(result.reason.contains("forward-secret"), "\(result.reason)")
        #expect(result.tlsVersion == .tlsv12)
    }

    @Test("SHA-1 signatures fail the baseline; 1024-bit RSA keys do not even parse")
    func chainStrength() async throws {
        let scratch = try OpenSSLScratch()
        try scratch.shell("openssl req -x509 -newkey rsa:1024 -nodes -keyout weak.key -out weak.pem -days 1 -subj /CN=weak -sha256")
        try scratch.shell("openssl req -x509 -newkey rsa:2048 -nodes -keyout sha1.key -out sha1.pem -days 1 -subj /CN=sha1 -sha1")
        try scratch.shell("openssl req -x509 -newkey rsa:2048 -nodes -keyout good.key -out good.pem -days 1 -subj /CN=good -sha256")
        #expect(throws: CertificateLoadingError.self) { try CertificateLoader.certificates(inFile: scratch.path("weak.pem")) }
        let sha1 = try CertificateLoader.certificates(inFile: scratch.path("sha1.pem"))
        let good = try CertificateLoader.certificates(inFile: scratch.path("good.pem"))
        #expect(TLSPolicyEvaluator.weakness(of: sha1)?.contains("SHA-256 or better") == true)
        #expect(TLSPolicyEvaluator.weakness(of: good) == nil)
        // A root's self-signature does not count: the anchor is trusted for what it is.
        let leaf = try root.leaf(["localhost"])
        #expect(TLSPolicyEvaluator.weakness(of: [leaf, root.certificate]) == nil)
    }
}
