import Crypto
import Foundation
import NIOCore
import NIOSSL
import ServerTrust
import TestTraits
import Testing
import X509

@Suite("TLS probe (servers on 127.0.0.1)", .ownThreads)
struct TLSProbeTests {
    let root: TestAuthority
    let intermediate: TestAuthority
    let key = P256.Signing.PrivateKey()
    let leaf: Certificate

    init() throws {
        root = try .root("Probe Root")
        intermediate = try root.intermediate("Probe Intermediate")
        leaf = try intermediate.leaf(["localhost", "127.0.0.1"], key: Certificate.PrivateKey(key))
    }

    @Test("captures the presented chain and the protocol; a pinning policy then judges it")
    func presentedChain() async throws {
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let presented = try await TLSProbe().probe(host: "localhost", port: server.port, connectingTo: "127.0.0.1").get()
        #expect(presented.chain == [leaf, intermediate.certificate])
        #expect(presented.tlsVersion == .tlsv13)

        let pinned = try TrustPolicy(mode: .publicKey, pins: [PublicKeyPin(certificate: intermediate.certificate)])
        #expect(
            await pinned.evaluate(
                presented.chain, host: "localhost", systemAnchors: [root.certificate],
                at: TestAuthority.now
            ).verdict == .trusted)
        let wrong = try TrustPolicy(mode: .publicKey, pins: [PublicKeyPin(sha256: Array(repeating: 3, count: 32))!])
        #expect(
            await wrong.evaluate(
                presented.chain, host: "localhost", systemAnchors: [root.certificate],
                at: TestAuthority.now
            ).verdict == .pinMismatch)
    }

    @Test("an IP address is dialled without SNI and still probed")
    func ipAddressHost() async throws {
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key, maximumTLSVersion: .tlsv12)
        defer { Task { await server.close() } }
        let presented = try await TLSProbe().probe(host: "127.0.0.1", port: server.port).get()
        #expect(presented.chain.first == leaf)
        #expect(presented.tlsVersion == .tlsv12)
    }

    @Test("a server that closes right after the handshake is still captured, with its protocol")
    func closesAfterHandshake() async throws {
        let server = try await TestTLSServer(
            chain: [leaf, intermediate.certificate], privateKey: Certificate.PrivateKey(key), closeAfterHandshake: true)
        defer { Task { await server.close() } }
        for _ in 0..<20 { // the race this guards against is timing-dependent: try it a few times
            let presented = try await TLSProbe().probe(host: "localhost", port: server.port, connectingTo: "127.0.0.1").get()
            #expect(presented.chain == [leaf, intermediate.certificate])
            #expect(presented.tlsVersion == .tlsv13)
        }
    }

    @Test("a refused connection is unreachable, never a trust failure")
    func refused() async throws {
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let result = await TLSProbe().probe(host: "127.0.0.1", port: port)
        guard case .failure(.unreachable) = result else {
            Issue.record("expected unreachable, got \(result)")
            return
        }
    }

    // A silent peer never answers: without the timeout this would never return.
    // (No wall-clock bound: other suites can starve the cooperative pool for seconds.)
    @Test("a silent peer costs the handshake timeout, then is unreachable", .timeLimit(.minutes(1)))
    func silentPeer() async throws {
        let server = try await TestTLSServer(silent: ())
        defer { Task { await server.close() } }
        let result = await TLSProbe(handshakeTimeout: .milliseconds(300)).probe(host: "127.0.0.1", port: server.port)
        #expect(result == .failure(.unreachable("no TLS handshake within 300 ms")))
    }

    @Test("openssl s_server as an independent peer")
    func opensslPeer() async throws {
        let scratch = try OpenSSLScratch()
        try leaf.serializeAsPEM().pemString.write(toFile: scratch.path("leaf.pem"), atomically: true, encoding: .utf8)
        try intermediate.certificate.serializeAsPEM().pemString.write(toFile: scratch.path("chain.pem"), atomically: true, encoding: .utf8)
        try key.pemRepresentation.write(toFile: scratch.path("key.pem"), atomically: true, encoding: .utf8)
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let server = try scratch.start([
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", "leaf.pem",
            "-cert_chain", "chain.pem", "-key", "key.pem", "-quiet"
        ])
        defer { scratch.stop(server) }
        let probe = TLSProbe(connectTimeout: .seconds(1), handshakeTimeout: .seconds(2))
        var result = await probe.probe(host: "localhost", port: port, connectingTo: "127.0.0.1")
        for _ in 0..<30 where (try? result.get()) == nil { // until s_server listens
            try await Task.sleep(for: .milliseconds(100))
            result = await probe.probe(host: "localhost", port: port, connectingTo: "127.0.0.1")
        }
        let presented = try result.get()
        #expect(presented.chain == [leaf, intermediate.certificate])
    }
}
