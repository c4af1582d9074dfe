import Foundation
import Reachability
import ReachabilityCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Path document")
struct PathDocumentTests {
    static let sample = Path(
        status: .wired, interface: .init(name: "eth0", index: 2, kind: .ethernet), gateway: "192.0.2.1",
        ipv4: true, ipv6: false, expensive: false, vpn: nil,
        interfaces: [
            .init(
                name: "eth0", index: 2, kind: .ethernet, operstate: "up", up: true, carrier: true,
                addresses: ["192.0.2.10/24"])
        ],
        trust: .ok, connectivity: .full, initial: false, since: Date(timeIntervalSince1970: 1_795_341_600), source: .daemon,
        routes: [.init(destination: "198.41.0.4", status: .wired, interface: "eth0", gateway: "192.0.2.1", source: "192.0.2.10")]
    )

    @Test("since: written as FoundationEssentials writes ISO 8601, read back to the second; other ISO 8601 forms still read")
    func sinceTimestamps() throws {
        for seconds in [0, 951_782_400, 1_795_341_599, 1_795_341_600, 4_102_444_799] as [TimeInterval] {
            let date = Date(timeIntervalSince1970: seconds + 0.75)
            var path = Self.sample
            path.since = date
            let object = try JSONSerialization.jsonObject(with: Data(path.jsonString().utf8)) as! [String: Any]
            #expect(object["since"] as? String == Date(timeIntervalSince1970: seconds).formatted(.iso8601))
            #expect(try Path(json: path.jsonString()).since == Date(timeIntervalSince1970: seconds))
        }
        var document = Self.sample.jsonString()
        document = document.replacingOccurrences(of: "2026-11-22T10:00:00Z", with: "2026-11-22T12:00:00+02:00")
        #expect(try Path(json: document).since == Date(timeIntervalSince1970: 1_795_341_600))
        #expect(throws: (any Error).self) {
            try Path(json: Self.sample.jsonString().replacingOccurrences(of: "2026-11-22T10:00:00Z", with: "2026-13-22T10:00:00Z"))
        }
    }

    @Test("since: the calendar worked out by hand agrees with gmtime_r from year 1 to 9999, before 1970 and on leap days")
    func sinceCalendar() {
        func expected(_ seconds: Int) -> String {
            var time = time_t(seconds)
            var fields = tm()
            gmtime_r(&time, &fields)
            func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
            let year = String(fields.tm_year + 1900)
            return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-\(two(fields.tm_mon + 1))-\(two(fields.tm_mday))T"
                + "\(two(fields.tm_hour)):\(two(fields.tm_min)):\(two(fields.tm_sec))Z"
        }
        // Every 25th day from 0001-01-01 to 9999-12-31, each at a different time of day:
        // 25 is prime to the 146,097 days of the Gregorian 400-year cycle, so the 146,083
        // days fall on as many different days of it (all but 14). Every third day took
        // seconds of a CPU the whole suite shares.
        var mismatches: [String] = []
        for day in stride(from: -719_162, through: 2_932_896, by: 25) {
            let seconds = day * 86_400 + (day & 0xFFFF) % 86_400
            let written = UTCTimestamp.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
            if written != expected(seconds), mismatches.count < 5 { mismatches.append("\(seconds): \(written)") }
        }
        #expect(mismatches.isEmpty)
        let boundaries: [(TimeInterval, String)] = [
            (-1, "1969-12-31T23:59:59Z"), (-0.25, "1969-12-31T23:59:59Z"), (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"), (951_868_799, "2000-02-29T23:59:59Z"), (-2_203_891_200, "1900-03-01T00:00:00Z"),
            (4_107_456_000, "2100-02-28T00:00:00Z"), (4_107_542_400, "2100-03-01T00:00:00Z")
        ]
        for (seconds, text) in boundaries {
            #expect(UTCTimestamp.format(Date(timeIntervalSince1970: seconds)) == text)
        }
    }

    @Test("encodes to the documented path document (docs/reachctl.md), nulls included")
    func encoding() throws {
        let object = try JSONSerialization.jsonObject(with: Data(Self.sample.jsonString().utf8)) as! [String: Any]
        for key in [
            "status", "reason", "interface", "gateway", "ipv4", "ipv6", "expensive", "vpn", "interfaces",
            "trust", "connectivity", "portal", "initial", "since", "source"
        ] {
            #expect(object.keys.contains(key), "missing \(key)")
        }
        #expect(object["status"] as? String == "wired")
        #expect(object["reason"] is NSNull)
        #expect(object["vpn"] is NSNull)
        #expect(object["connectivity"] as? String == "full")
        #expect(object["portal"] is NSNull)
        #expect(object["since"] as? String == "2026-11-22T10:00:00Z")
        #expect(object["source"] as? String == "daemon")
        #expect((object["interface"] as? [String: Any])?["kind"] as? String == "ethernet")
        #expect(Self.sample.jsonString().contains("\"192.0.2.10/24\""), "slashes are not escaped")
    }

    @Test("jsonString writes what Codable encodes, in the contract's key order, escaped")
    func writerMatchesCodable() throws {
        var tricky = Self.sample
        tricky.destination = "quote\" back\\slash \u{01} tab\t é"
        tricky.interfaces[0].addresses.append("line\nbreak")
        tricky.connectivity = .portal
        tricky.portal = "http://192.0.2.1/login?next=/\"x\""
        // Numbers are written digit by digit: none, one, many, and the sign; and enough
        // interfaces that the document outgrows the writer's first reservation.
        for index in [0, 7, 1_234_567_890, -42, Int.max, Int.min] + Array(100..<140) {
            tricky.interfaces.append(
                .init(name: "if\(index)", index: index, kind: .veth, operstate: "up", up: true, carrier: true, addresses: []))
        }
        let written = try JSONSerialization.jsonObject(with: Data(tricky.jsonString().utf8)) as! NSDictionary
        let encoder = JSONEncoder()
        let encoded = try JSONSerialization.jsonObject(with: encoder.encode(tricky)) as! NSDictionary
        #expect(written == encoded)
        #expect(tricky.jsonString().hasPrefix("{\"status\":\"wired\",\"reason\":null,\"interface\":{"))
        #expect(try Path(json: tricky.jsonString()) == tricky)
        #expect(tricky.jsonLine() == Array((tricky.jsonString() + "\n").utf8), "reachctl watch's line: the same bytes and a newline")
    }

    @Test("round-trips")
    func roundTrip() throws {
        #expect(try Path(json: Self.sample.jsonString()) == Self.sample)
        var unreachable = Self.sample
        unreachable.status = .unreachable
        unreachable.reason = .noCarrier
        unreachable.interface = nil
        #expect(try Path(json: unreachable.jsonString()) == unreachable)
    }

    @Test("isSamePath ignores since and initial only")
    func sameness() {
        var other = Self.sample
        other.since = Date()
        other.initial = true
        #expect(Self.sample.isSamePath(as: other))
        other.gateway = "192.0.2.254"
        #expect(!Self.sample.isSamePath(as: other))
    }
}
