import Crypto
import Foundation
import NIOSSL
import ServerTrust
import TestTraits
import Testing
import X509

/// What a `TLSConfiguration` alone carries of a host's policy (for AsyncHTTPClient
/// and other clients without a verification callback), checked by real handshakes
/// with plain NIOSSL — no callback — against a server on loopback.
@Suite("ClientTLSPolicy: a host's policy through a TLSConfiguration alone", .ownThreads)
struct ClientTLSPolicyTests {
    let root: TestAuthority
    let other: TestAuthority
    let key = P256.Signing.PrivateKey()
    let leaf: Certificate

    init() throws {
        root = try .root("App Root", center: Date())
        other = try .root("Other Root", center: Date())
        leaf = try root.leaf(["localhost"], key: Certificate.PrivateKey(key))
    }

    func configuration(_ entry: String) throws -> TrustConfiguration {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("client-tls-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try root.certificate.serializeAsPEM().pemString.write(
            to: directory.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
        try other.certificate.serializeAsPEM().pemString.write(
            to: directory.appendingPathComponent("other.pem"), atomically: true, encoding: .utf8)
        let file = directory.appendingPathComponent("reachd.toml")
        try "[[trust.host]]\nmatch = \"localhost\"\n\(entry)\n".write(to: file, atomically: true, encoding: .utf8)
        return try TrustConfiguration.load(contentsOf: file.path)
    }

    @Test("the host's anchors as the only roots: its own CA connects, another CA's anchor refuses the same server")
    func anchorsOnly() async throws {
        let server = try await TestTLSServer(chain: [leaf], key: key)
        defer { Task { await server.close() } }
        let own = try ClientTLSPolicy(configuration: try configuration("anchors = [\"root.pem\"]"), host: "localhost", anchorsOnly: true)
        #expect(try await handshake(with: server, own.tlsConfiguration))
        #expect(own.enforced.contains { $0.contains("only roots") })
        #expect(own.notEnforced == ["the ATS baseline's key sizes and SHA-256+ signatures"], "tls = \"ats\" is the default")
        let whole = try ClientTLSPolicy(
            configuration: try configuration("anchors = [\"root.pem\"]\ntls = \"none\""), host: "localhost", anchorsOnly: true)
        #expect(whole.notEnforced.isEmpty, "everything of this policy is carried")
        let wrong = try ClientTLSPolicy(configuration: try configuration("anchors = [\"other.pem\"]"), host: "localhost", anchorsOnly: true)
        #expect(try await !handshake(with: server, wrong.tlsConfiguration))
        // Beside the system's roots the right anchor connects too (the test root is in no system store).
        let beside = try ClientTLSPolicy(configuration: try configuration("anchors = [\"root.pem\"]"), host: "localhost")
        #expect(try await handshake(with: server, beside.tlsConfiguration))
        // Without an entry: the client's default, which does not know the test root.
        let none = try ClientTLSPolicy(configuration: TrustConfiguration(), host: "localhost")
        #expect(try await !handshake(with: server, none.tlsConfiguration))
    }

    @Test("what a configuration cannot carry is named: public-key pins, OCSP; a policy without chain validation is refused")
    func gapsAndRefusals() throws {
        let pins =
            "mode = \"public-key\"\npins = [\"sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\", \"sha256/AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=\"]\nrevocation = \"ocsp-soft\""
        let pinned = try ClientTLSPolicy(configuration: try configuration(pins), host: "localhost")
        #expect(pinned.notEnforced.contains { $0.hasPrefix("public-key pins (2)") }, "\(pinned.notEnforced)")
        #expect(pinned.notEnforced.contains("OCSP revocation checking"))
        #expect(pinned.tlsConfiguration.minimumTLSVersion == .tlsv12)
        #expect(throws: ClientTLSPolicy.Refusal.self) {
            try ClientTLSPolicy(configuration: try configuration("mode = \"disabled\""), host: "localhost")
        }
    }
}
