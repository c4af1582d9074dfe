import Foundation
import ServerTrust
import TestTraits
import Testing
import X509

@Suite("Default evaluation: chain and host", .ownThreads)
struct ChainValidatorTests {
    let root: TestAuthority
    let intermediate: TestAuthority

    init() throws {
        root = try .root("Test Root")
        intermediate = try root.intermediate("Test Intermediate")
    }

    func validate(_ presented: [Certificate], host: String?, anchors: [Certificate]? = nil) async -> ChainValidator.Outcome {
        await ChainValidator(anchors: anchors ?? [root.certificate], validationTime: TestAuthority.now).validate(presented, host: host)
    }

    func verdict(_ outcome: ChainValidator.Outcome) -> TrustVerdict {
        if case let .untrusted(evaluation) = outcome { return evaluation.verdict }
        return .trusted
    }

    @Test("a chain to an anchor the server does not send validates, anchor included")
    func trusted() async throws {
        let leaf = try intermediate.leaf(["api.example.com"])
        let outcome = await validate([leaf, intermediate.certificate], host: "api.example.com")
        #expect(outcome == .trusted([leaf, intermediate.certificate, root.certificate]))
    }

    @Test("a missing intermediate, an unknown root and a self-signed leaf do not")
    func untrustedChains() async throws {
        let leaf = try intermediate.leaf(["api.example.com"])
        #expect(verdict(await validate([leaf], host: "api.example.com")) == .chainInvalid)
        let stranger = try TestAuthority.root("Stranger")
        #expect(
            verdict(
                await validate(
                    [leaf, intermediate.certificate], host: "api.example.com",
                    anchors: [stranger.certificate])) == .chainInvalid)
        let selfSigned = try TestAuthority.root("api.example.com").certificate
        #expect(verdict(await validate([selfSigned], host: "api.example.com")) == .chainInvalid)
    }

    @Test("expired and not-yet-valid leaves are expired")
    func validity() async throws {
        let expired = try intermediate.leaf(["api.example.com"], notBefore: TestAuthority.now - 7200, notAfter: TestAuthority.now - 1)
        let early = try intermediate.leaf(["api.example.com"], notBefore: TestAuthority.now + 60, notAfter: TestAuthority.now + 7200)
        #expect(verdict(await validate([expired, intermediate.certificate], host: "api.example.com")) == .expired)
        #expect(verdict(await validate([early, intermediate.certificate], host: "api.example.com")) == .expired)
    }

    @Test(
        "host names: exact, case, trailing dot, several SANs, wildcards, IP addresses",
        arguments: [
            (["api.example.com"], "API.Example.COM.", TrustVerdict.trusted),
            (["www.example.com", "api.example.com"], "api.example.com", .trusted),
            (["api.example.com"], "web.example.com", .hostMismatch),
            (["*.example.com"], "a.example.com", .trusted),
            (["*.example.com"], "a.b.example.com", .hostMismatch),
            (["*.example.com"], "example.com", .hostMismatch),
            (["*.co.uk"], "example.co.uk", .hostMismatch),
            (["192.0.2.7"], "192.0.2.7", .trusted),
            (["192.0.2.7"], "192.0.2.8", .hostMismatch),
            (["2001:db8::7"], "[2001:db8::7]", .trusted),
            (["api.example.com"], "192.0.2.7", .hostMismatch)
        ])
    func hostNames(names: [String], host: String, expected: TrustVerdict) async throws {
        let leaf = try intermediate.leaf(names)
        #expect(verdict(await validate([leaf, intermediate.certificate], host: host)) == expected)
    }

    @Test("a leaf without serverAuth is not a TLS server certificate")
    func extendedKeyUsage() async throws {
        let leaf = try intermediate.leaf(["api.example.com"], serverAuth: false)
        #expect(verdict(await validate([leaf, intermediate.certificate], host: "api.example.com")) == .chainInvalid)
    }
}
