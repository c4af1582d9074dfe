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
    static func append(_ date: Date, to bytes: inout [UInt8]) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var fields = tm()
        guard gmtime_r(&seconds, &fields) != nil else { return bytes.append(contentsOf: date.formatted(.iso8601).utf8) }
        func digits(_ value: Int32, _ count: Int) { JSONWriter.appendDecimal(Int(value), minimumDigits: count, to: &bytes) }
        digits(fields.tm_year + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(fields.tm_mon + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(fields.tm_mday, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(fields.tm_hour, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(fields.tm_min, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(fields.tm_sec, 2)
        bytes.append(UInt8(ascii: "Z"))
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
