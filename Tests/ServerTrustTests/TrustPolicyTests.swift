import Crypto
import Foundation
import ServerTrust
import TestTraits
import Testing
import X509

@Suite("Pinning policies", .ownThreads)
struct TrustPolicyTests {
    let root: TestAuthority
    let intermediate: TestAuthority
    let leaf: Certificate
    let host = "api.example.com"

    init() throws {
        root = try .root("Test Root")
        intermediate = try root.intermediate("Test Intermediate")
        leaf = try intermediate.leaf([host])
    }

    func pin(_ certificate: Certificate) throws -> PublicKeyPin { try PublicKeyPin(certificate: certificate) }

    func verdict(_ policy: TrustPolicy, _ presented: [Certificate], anchors: [Certificate]? = nil) async -> TrustVerdict {
        await policy.evaluate(presented, host: host, systemAnchors: anchors ?? [root.certificate], at: TestAuthority.now).verdict
    }

    @Test("a pin on the leaf, the intermediate, or a root the server does not send")
    func pinsAnywhereInTheValidatedChain() async throws {
        for pinned in [leaf, intermediate.certificate, root.certificate] {
            let policy = try TrustPolicy(mode: .publicKey, pins: [try pin(pinned)])
            #expect(await verdict(policy, [leaf, intermediate.certificate]) == .trusted)
        }
    }

    @Test("a wrong pin fails; one good pin among bad ones is enough")
    func wrongAndBackupPins() async throws {
        let other = try pin(try TestAuthority.root("Other").certificate)
        #expect(await verdict(try TrustPolicy(mode: .publicKey, pins: [other]), [leaf, intermediate.certificate]) == .pinMismatch)
        #expect(
            await verdict(
                try TrustPolicy(mode: .publicKey, pins: [other, try pin(intermediate.certificate)]),
                [leaf, intermediate.certificate]) == .trusted)
    }

    @Test("a rogue chain with the pinned intermediate appended does not pass")
    func rogueChainWithPinnedCertificateAppended() async throws {
        // An intercepting CA the system trusts, issuing for the same name.
        let rogue = try TestAuthority.root("Intercepting CA")
        let rogueLeaf = try rogue.leaf([host])
        let anchors = [root.certificate, rogue.certificate]
        let pinned = try TrustPolicy(mode: .publicKey, pins: [try pin(intermediate.certificate)])
        #expect(await verdict(pinned, [rogueLeaf, intermediate.certificate], anchors: anchors) == .pinMismatch)
        // Without chain validation pins can only be matched against what was sent:
        // AFNetworking's semantics, and why validate-chain = false is dangerous.
        let unvalidated = try TrustPolicy(mode: .publicKey, pins: [try pin(intermediate.certificate)], validateChain: false)
        #expect(await verdict(unvalidated, [rogueLeaf, intermediate.certificate], anchors: anchors) == .trusted)
    }

    @Test("certificate pinning matches exact certificates")
    func certificatePinning() async throws {
        #expect(await verdict(try TrustPolicy(mode: .certificate, certificates: [leaf]), [leaf, intermediate.certificate]) == .trusted)
        let twin = try intermediate.leaf([host]) // same names, another key
        #expect(await verdict(try TrustPolicy(mode: .certificate, certificates: [twin]), [leaf, intermediate.certificate]) == .pinMismatch)
    }

    @Test("a self-signed server passes only with accept-self-signed and its certificate pinned")
    func selfSigned() async throws {
        let certificate = try selfSignedServer()
        #expect(await verdict(try TrustPolicy(mode: .certificate, certificates: [certificate]), [certificate]) == .chainInvalid)
        let accepting = try TrustPolicy(mode: .certificate, certificates: [certificate], acceptSelfSigned: true)
        #expect(await verdict(accepting, [certificate]) == .trusted)
        #expect(
            await accepting.evaluate(
                [certificate], host: "other.example.com", systemAnchors: [],
                at: TestAuthority.now
            ).verdict == .hostMismatch)
    }

    @Test("policies that protect nothing are configuration errors")
    func configurationErrors() {
        #expect(throws: TrustPolicyError.self) { try TrustPolicy(mode: .default, validateChain: false, validateHost: true) }
        #expect(throws: TrustPolicyError.self) { try TrustPolicy(mode: .publicKey) }
        #expect(throws: TrustPolicyError.self) { try TrustPolicy(mode: .certificate) }
        #expect(throws: TrustPolicyError.self) {
            try TrustPolicy(mode: .publicKey, pins: [PublicKeyPin(sha256: Array(repeating: 1, count: 32))!], acceptSelfSigned: true)
        }
    }

    @Test("disabled trusts anything")
    func disabled() async throws {
        #expect(await verdict(try TrustPolicy(mode: .disabled), []) == .trusted)
    }

    /// A self-signed server certificate with a SAN, CA:TRUE, as openssl makes by default.
    func selfSignedServer() throws -> Certificate {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let name = try DistinguishedName { CommonName(host) }
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: TestAuthority.now - 3600, notValidAfter: TestAuthority.now + 3600, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                SubjectAlternativeNames([.dnsName(host)])
            },
            issuerPrivateKey: key)
    }
}
