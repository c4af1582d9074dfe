import Crypto
import Foundation
import NIOCore
import ServerTrust
import TestTraits
import Testing
import X509

/// OCSP against `openssl ocsp` as the responder: an independent implementation,
/// answering from an index of good and revoked certificates.
@Suite("OCSP revocation (openssl ocsp on 127.0.0.1)", .ownThreads)
struct RevocationTests {
    let scratch: OpenSSLScratch
    let root: TestAuthority
    let closed: ClosedPort
    var port: Int { closed.port }
    let good: Certificate
    let revoked: Certificate

    init() async throws {
        scratch = try OpenSSLScratch()
        // The responder signs with the real clock, so these certificates are valid around it.
        root = try .root("OCSP Root", center: Date())
        closed = try ClosedPort()
        good = try root.leaf(["localhost"], ocspResponder: "http://127.0.0.1:\(closed.port)/")
        revoked = try root.leaf(["localhost"], ocspResponder: "http://127.0.0.1:\(closed.port)/")
        try root.certificate.serializeAsPEM().pemString.write(toFile: scratch.path("ca.pem"), atomically: true, encoding: .utf8)
        try root.key.serializeAsPEM().pemString.write(toFile: scratch.path("ca.key"), atomically: true, encoding: .utf8)
        let expiry = "301231235959Z"
        let index =
            "V\t\(expiry)\t\t\(Self.serial(good))\tunknown\t/CN=Test Server\n"
            + "R\t\(expiry)\t240101000000Z,keyCompromise\t\(Self.serial(revoked))\tunknown\t/CN=Test Server\n"
        try index.write(toFile: scratch.path("index.txt"), atomically: true, encoding: .utf8)
    }

    /// The serial as openssl's index writes it: upper-case hex, no leading zero bytes.
    static func serial(_ certificate: Certificate) -> String {
        var bytes = Array(certificate.serialNumber.bytes)
        while bytes.count > 1 && bytes[0] == 0 { bytes.removeFirst() }
        return bytes.map { String(format: "%02X", $0) }.joined()
    }

    func withResponder<T>(_ body: () async throws -> T) async throws -> T {
        let responder = try await scratch.startListening(
            [
                "ocsp", "-index", "index.txt", "-port", "\(port)", "-rsigner", "ca.pem",
                "-rkey", "ca.key", "-CA", "ca.pem", "-ndays", "1"
            ], port: port)
        defer { scratch.stop(responder) }
        return try await body()
    }

    func evaluate(_ leaf: Certificate, _ mode: RevocationTrustEvaluator.Mode) async throws -> TrustEvaluation {
        // A live responder answers in milliseconds; the bound is for a machine busy with the rest of the suite
        // (soft-fail turns a late answer into "not known to be revoked").
        let policy = try TrustPolicy(revocation: mode, revocationTimeout: .seconds(10))
        return await policy.evaluate([leaf], host: "localhost", systemAnchors: [root.certificate])
    }

    @Test("good passes, revoked fails with the responder's reason")
    func goodAndRevoked() async throws {
        try await withResponder {
            for mode in RevocationTrustEvaluator.Mode.allCases {
                let passed = try await evaluate(good, mode)
                #expect(passed.verdict == .trusted, "\(mode): \(passed)")
                let failed = try await evaluate(revoked, mode)
                #expect(failed.verdict == .revoked, "\(mode): \(failed)")
                #expect(failed.reason.contains("keyCompromise"), "\(failed.reason)")
            }
        }
    }

    @Test("an unreachable responder: soft-fail passes, hard-fail does not")
    func responderDown() async throws {
        #expect(try await evaluate(good, .soft).verdict == .trusted)
        let hard = try await evaluate(good, .hard)
        #expect(hard.verdict == .revoked)
        #expect(hard.reason.contains("not confirmed"), "\(hard.reason)")
    }

    @Test("revocation needs a validated chain")
    func needsChainValidation() {
        #expect(throws: TrustPolicyError.self) {
            try TrustPolicy(
                mode: .publicKey, pins: [PublicKeyPin(sha256: Array(repeating: 1, count: 32))!],
                validateChain: false, revocation: .soft)
        }
    }
}
