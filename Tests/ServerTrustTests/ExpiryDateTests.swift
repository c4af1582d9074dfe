import FoundationEssentials
import TestTraits
import Testing

@testable import ServerTrust

/// `expires = YYYY-MM-DD` is midnight UTC of that day, computed without full
/// Foundation: the same instant FoundationEssentials' ISO 8601 parser gives.
@Suite("pin expiry dates", .ownThreads)
struct ExpiryDateTests {
    @Test("midnight UTC, leap years included; days that do not exist are refused")
    func utcMidnight() throws {
        for (year, month, day) in [
            (1970, 1, 1), (2000, 2, 29), (2024, 2, 29), (2026, 11, 25), (2027, 6, 30), (2027, 12, 31), (2100, 3, 1), (2400, 2, 29)
        ] {
            let text = "\(year)-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)T00:00:00Z"
            #expect(
                HostTrustConfiguration.utcMidnight(year: year, month: month, day: day) == (try Date(text, strategy: .iso8601)), "\(text)")
        }
        for (year, month, day) in [(2027, 2, 29), (2100, 2, 29), (2027, 4, 31), (2027, 13, 1), (2027, 0, 10), (2027, 1, 0)] {
            #expect(HostTrustConfiguration.utcMidnight(year: year, month: month, day: day) == nil, "\(year)-\(month)-\(day)")
        }
    }
}
