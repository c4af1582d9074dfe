import FoundationEssentials
import X509

/// A host's pins with TrustKit's rules around them.
public struct PinSet: Sendable, Equatable {
    /// The accepted keys.
    public let pins: Set<PublicKeyPin>
    /// After this moment the pins are not enforced (verdict `pins-expired`), so an
    /// app that was never updated does not brick itself when keys rotate.
    public let expires: Date?
    /// false: report-only — a mismatch is reported, not a failure.
    public let enforce: Bool
    /// How many pins the set must hold (the backup-pin rule).
    public let minimumPins: Int

    /// A pin set, refused when it could lock every client out.
    ///
    /// - Parameters:
    ///   - pins: The accepted keys.
    ///   - expires: After this, the pins are not enforced; nil: never.
    ///   - enforce: false: report-only.
    ///   - minimumPins: default 2 when enforcing (the backup-pin rule of RFC 7469:
    ///     one pin for the live key, one for a key kept offline), 1 otherwise.
    /// - Throws: `TrustPolicyError` when enforcing with fewer pins than required, or with a minimum of 1.
    public init(pins: Set<PublicKeyPin>, expires: Date? = nil, enforce: Bool = true, minimumPins: Int? = nil) throws(TrustPolicyError) {
        let minimum = minimumPins ?? (enforce ? 2 : 1)
        if enforce && minimum < 2 {
            throw TrustPolicyError(
                "min-pins = \(minimum) while enforcing: one lost or rotated key would lock every client out; keep a backup pin (min-pins ≥ 2)"
            )
        }
        guard pins.count >= minimum else {
            throw TrustPolicyError("\(pins.count) pin\(pins.count == 1 ? "" : "s") configured, min-pins requires \(minimum) (a backup pin)")
        }
        self.pins = pins
        self.expires = expires
        self.enforce = enforce
        self.minimumPins = minimum
    }

    /// Whether the set is past `expires` at `time`.
    public func hasExpired(at time: Date) -> Bool { expires.map { time > $0 } ?? false }

    /// A warning when every pin is a key of `chain`: no backup key is pinned, so
    /// rotating to a new key would fail every client.
    public func backupWarning(for chain: [Certificate]) -> String? {
        let chainPins = Set(chain.compactMap { try? PublicKeyPin(certificate: $0) })
        guard !pins.isEmpty, pins.isSubset(of: chainPins) else { return nil }
        return "every pin is a key of the current chain: pin a backup key kept offline, or a key rotation will fail every client"
    }
}
