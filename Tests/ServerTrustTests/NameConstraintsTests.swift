import Foundation
import ServerTrust
import SwiftASN1
import TestTraits
import Testing
import X509

/// Private CAs constrained to their own names, as companies run them: every name
/// form RFC 5280 defines is checked, through the default evaluation.
@Suite("Name constraints (RFC 5280 4.2.1.10)", .ownThreads)
struct NameConstraintsTests {
    let root: TestAuthority

    init() throws { root = try .root("Test Root") }

    /// The verdict and its reason for a leaf issued by an intermediate with `constraints`.
    func evaluate(
        _ constraints: NameConstraints, names: [String], otherNames: [GeneralName] = [],
        host: String? = nil
    ) async throws -> (TrustVerdict, String) {
        let authority = try root.intermediate("Constrained CA", nameConstraints: constraints)
        let leaf = try authority.leaf(names, otherNames: otherNames)
        let validator = ChainValidator(anchors: [root.certificate], validationTime: TestAuthority.now, profile: .pinnedAnchors)
        switch await validator.validate([leaf, authority.certificate], host: host ?? names.first) {
        case .trusted: return (.trusted, "")
        case let .untrusted(evaluation): return (evaluation.verdict, evaluation.reason)
        }
    }

    static func subnet(_ address: [UInt8], prefix: Int) -> ASN1OctetString {
        let mask = (0..<address.count).map { index in UInt8(truncatingIfNeeded: 0xFF << max(0, min(8, 8 * (index + 1) - prefix))) }
        return ASN1OctetString(contentBytes: ArraySlice(address + mask))
    }

    @Test("dNSName: the domain and below it pass, a look-alike does not")
    func dnsNames() async throws {
        let corp = NameConstraints(permittedDNSDomains: ["corp.example"])
        #expect(try await evaluate(corp, names: ["api.corp.example"]).0 == .trusted)
        #expect(try await evaluate(corp, names: ["CORP.example"]).0 == .trusted)
        let (verdict, reason) = try await evaluate(corp, names: ["api.evilcorp.example"])
        #expect(verdict == .chainInvalid && reason.contains("outside the permitted names"), "\(reason)")
        // One name outside is enough.
        #expect(try await evaluate(corp, names: ["api.corp.example", "api.other.example"]).0 == .chainInvalid)
    }

    @Test("a wildcard name is excluded when one of the names it stands for is")
    func wildcards() async throws {
        let excluded = NameConstraints(excludedDNSDomains: ["admin.corp.example"])
        let (verdict, reason) = try await evaluate(excluded, names: ["*.corp.example"], host: "www.corp.example")
        #expect(verdict == .chainInvalid && reason.contains("excluded"), "\(reason)")
        #expect(try await evaluate(excluded, names: ["*.www.corp.example"], host: "a.www.corp.example").0 == .trusted)
        // Permitted: the wildcard is within when everything it stands for is.
        #expect(
            try await evaluate(
                NameConstraints(permittedDNSDomains: ["corp.example"]), names: ["*.corp.example"],
                host: "www.corp.example"
            ).0 == .trusted)
        #expect(
            try await evaluate(
                NameConstraints(permittedDNSDomains: ["www.corp.example"]), names: ["*.corp.example"],
                host: "www.corp.example"
            ).0 == .chainInvalid)
    }

    @Test("iPAddress: a CIDR subnet of the same family")
    func addresses() async throws {
        let tenNet = NameConstraints(permittedIPRanges: [Self.subnet([10, 0, 0, 0], prefix: 8)])
        #expect(try await evaluate(tenNet, names: ["10.20.30.40"]).0 == .trusted)
        #expect(try await evaluate(tenNet, names: ["192.0.2.1"]).0 == .chainInvalid)
        // A DNS name is another form: an address constraint says nothing about it.
        #expect(try await evaluate(tenNet, names: ["api.corp.example"]).0 == .trusted)
        let excludedV6 = NameConstraints(excludedIPRanges: [
            Self.subnet([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 12), prefix: 32)
        ])
        #expect(try await evaluate(excludedV6, names: ["2001:db8::1"]).0 == .chainInvalid)
        #expect(try await evaluate(excludedV6, names: ["2001:db9::1"]).0 == .trusted)
    }

    @Test("directoryName: the subject must begin with a permitted name")
    func directoryNames() async throws {
        // TestAuthority's leaves are "CN=Test Server".
        let permitted = NameConstraints(permittedSubtrees: [.directoryName(try DistinguishedName { CommonName("Test Server") })])
        #expect(try await evaluate(permitted, names: ["api.corp.example"]).0 == .trusted)
        let other = NameConstraints(permittedSubtrees: [.directoryName(try DistinguishedName { CommonName("Other") })])
        #expect(try await evaluate(other, names: ["api.corp.example"]).0 == .chainInvalid)
        let excluded = NameConstraints(excludedSubtrees: [.directoryName(try DistinguishedName { CommonName("Test Server") })])
        #expect(try await evaluate(excluded, names: ["api.corp.example"]).0 == .chainInvalid)
    }

    @Test("rfc822Name: a mailbox, a host, or every host below a domain")
    func emailAddresses() async throws {
        let host = NameConstraints(permittedEmailAddresses: ["corp.example"])
        #expect(try await evaluate(host, names: ["api.corp.example"], otherNames: [.rfc822Name("ops@corp.example")]).0 == .trusted)
        #expect(
            try await evaluate(host, names: ["api.corp.example"], otherNames: [.rfc822Name("ops@mail.corp.example")]).0 == .chainInvalid)
        let domain = NameConstraints(permittedEmailAddresses: [".corp.example"])
        #expect(try await evaluate(domain, names: ["api.corp.example"], otherNames: [.rfc822Name("ops@mail.corp.example")]).0 == .trusted)
        let mailbox = NameConstraints(excludedEmailAddresses: ["root@corp.example"])
        #expect(try await evaluate(mailbox, names: ["api.corp.example"], otherNames: [.rfc822Name("root@CORP.example")]).0 == .chainInvalid)
        #expect(try await evaluate(mailbox, names: ["api.corp.example"], otherNames: [.rfc822Name("ops@corp.example")]).0 == .trusted)
    }

    @Test("uniformResourceIdentifier: the host of the URI; an address or no host is outside")
    func uris() async throws {
        let constraint = NameConstraints(permittedURIDomains: [".corp.example"])
        #expect(
            try await evaluate(
                constraint, names: ["api.corp.example"],
                otherNames: [.uniformResourceIdentifier("https://user@api.corp.example:8443/x")]
            ).0 == .trusted)
        #expect(
            try await evaluate(
                constraint, names: ["api.corp.example"],
                otherNames: [.uniformResourceIdentifier("https://10.0.0.1/")]
            ).0 == .chainInvalid)
        #expect(
            try await evaluate(
                constraint, names: ["api.corp.example"],
                otherNames: [.uniformResourceIdentifier("urn:example:x")]
            ).0 == .chainInvalid)
    }

    @Test("a constraint on a form that cannot be compared rejects only a certificate with a name of that form")
    func incomparableForms() async throws {
        let type: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 311, 20, 2, 3] // Microsoft's UPN
        let excluded = NameConstraints(excludedSubtrees: [.otherName(.init(typeID: type, value: try ASN1Any(erasing: ASN1Null())))])
        #expect(try await evaluate(excluded, names: ["api.corp.example"]).0 == .trusted)
        let upn = GeneralName.otherName(.init(typeID: type, value: try ASN1Any(erasing: ASN1UTF8String("ops@corp.example"))))
        let (verdict, reason) = try await evaluate(excluded, names: ["api.corp.example"], otherNames: [upn])
        #expect(verdict == .chainInvalid && reason.contains("cannot be checked"), "\(reason)")
    }
}
