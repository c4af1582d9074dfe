import Foundation
import ServerTrust
import Testing

@Suite("Pin sets")
struct PinSetTests {
    let first = PublicKeyPin(sha256: Array(repeating: 1, count: 32))!
    let second = PublicKeyPin(sha256: Array(repeating: 2, count: 32))!

    @Test("enforcing needs a backup pin; report-only does not")
    func backupPinRule() throws {
        #expect(throws: TrustPolicyError.self) { try PinSet(pins: [first]) }
        #expect(throws: TrustPolicyError.self) { try PinSet(pins: [first, second], minimumPins: 1) }
        #expect(try PinSet(pins: [first, second]).minimumPins == 2)
        #expect(try PinSet(pins: [first], enforce: false).minimumPins == 1)
    }

    @Test("pins expire")
    func expiry() throws {
        let set = try PinSet(pins: [first, second], expires: TestAuthority.now)
        #expect(!set.hasExpired(at: TestAuthority.now))
        #expect(set.hasExpired(at: TestAuthority.now + 1))
    }

    @Test("a warning when every pin is in the current chain")
    func backupWarning() throws {
        let root = try TestAuthority.root("Root")
        let intermediate = try root.intermediate("Intermediate")
        let leaf = try intermediate.leaf(["api.example.com"])
        let chain = [leaf, intermediate.certificate, root.certificate]
        let inChain = try PinSet(pins: [PublicKeyPin(certificate: leaf), PublicKeyPin(certificate: intermediate.certificate)])
        #expect(inChain.backupWarning(for: chain) != nil)
        let withBackup = try PinSet(pins: [PublicKeyPin(certificate: leaf), first])
        #expect(withBackup.backupWarning(for: chain) == nil)
    }
}
