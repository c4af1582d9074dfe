import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// The document's `since`: ISO 8601 in UTC to the second ("2026-11-22T10:00:00Z").
/// Written and read on every publication by the daemon and every subscriber:
/// `Date.ISO8601FormatStyle` goes through a `Calendar` each time, several times
/// the cost of the rest of the field, so the one form reachd writes is done by hand.
package enum UTCTimestamp {
    package static func format(_ date: Date) -> String {
        var bytes: [UInt8] = []
        append(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `format(date)`'s text to `bytes`, digit by digit (a document's `since`).
    /// The calendar is worked out here rather than by `gmtime_r`, which takes the
    /// time-zone lock and consults the zone's rules even for UTC: an eighth of the code
    /// a document runs, on the way to `reachctl watch --direct`'s line (BENCHMARKS.md §32).
    static func append(_ date: Date, to bytes: inout [UInt8]) {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let (days, secondOfDay) = seconds.floorDivided(by: 86_400)
        let (year, month, day) = civil(daysSince1970: days)
        JSONWriter.appendDecimal(year, minimumDigits: 4, to: &bytes)
        bytes.append(addingCapacity: 16) { out in
            appendTwoDigits(month, after: UInt8(ascii: "-"), to: &out)
            appendTwoDigits(day, after: UInt8(ascii: "-"), to: &out)
            appendTwoDigits(secondOfDay / 3600, after: UInt8(ascii: "T"), to: &out)
            appendTwoDigits(secondOfDay / 60 % 60, after: UInt8(ascii: ":"), to: &out)
            appendTwoDigits(secondOfDay % 60, after: UInt8(ascii: ":"), to: &out)
            out.append(UInt8(ascii: "Z"))
        }
    }

    private static func appendTwoDigits(_ value: Int, after separator: UInt8, to out: inout OutputSpan<UInt8>) {
        out.append(separator)
        out.append(UInt8(ascii: "0") + UInt8(value / 10))
        out.append(UInt8(ascii: "0") + UInt8(value % 10))
    }

    /// The proleptic Gregorian date `days` after 1970-01-01: the days-to-civil
    /// algorithm of Howard Hinnant's "chrono-Compatible Low-Level Date Algorithms",
    /// counted in 400-year eras of 146,097 days from 0000-03-01.
    private static func civil(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let (era, dayOfEra) = (days + 719_468).floorDivided(by: 146_097)
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153 // 0 is March
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
    }

    /// The form `format` writes; any other ISO 8601 form through FoundationEssentials.
    package static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for index in range {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int32(digit)
            }
            return value
        }
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "Z"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else {
            return try? Date(text, strategy: .iso8601)
        }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = month - 1
        fields.tm_mday = day
        fields.tm_hour = hour
        fields.tm_min = minute
        fields.tm_sec = second
        return Date(timeIntervalSince1970: TimeInterval(timegm(&fields)))
    }
}

private extension Int {
    /// Quotient and remainder rounded toward negative infinity: a time before 1970
    /// is still a day and a non-negative second of that day.
    func floorDivided(by divisor: Int) -> (quotient: Int, remainder: Int) {
        let remainder = self % divisor
        return remainder < 0 ? (self / divisor - 1, remainder + divisor) : (self / divisor, remainder)
    }
}
