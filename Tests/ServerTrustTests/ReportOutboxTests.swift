import Foundation
import ServerTrust
import TestTraits
import Testing

/// Reports whose collectors did not answer wait in the outbox, and are sent
/// when they come back; a week later, or unreadable, they are dropped.
@Suite("The report outbox", .ownThreads)
struct ReportOutboxTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID())").path

    func report(at time: Date, result: TrustVerdict = .pinMismatch) throws -> PinFailureReport {
        try ReportSpoolTests().report(at: time, result: result)
    }

    func entries(_ spool: ReportSpool) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: spool.outbox.directory)) ?? []).sorted()
    }

    /// The outbox's first entry, read back from disk.
    func onlyEntry(_ spool: ReportSpool) throws -> ReportOutbox.Entry {
        let name = try #require(entries(spool).first)
        return try ReportOutbox.Entry(reading: Array(try Data(contentsOf: URL(fileURLWithPath: "\(spool.outbox.directory)/\(name)"))))
    }

    @Test("a collector that was down gets the report when it is back; each collector once; delivered reports leave the outbox")
    func deliveredWhenBack() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let live = try await TestReportCollector()
        defer { Task { await live.close() } }
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let down = "http://127.0.0.1:\(port)/pins"
        let now = Date()
        try #require(try spool.write(try report(at: now), deliverTo: [live.url, down]) != nil)
        #expect(spool.outbox.pendingCount == 1)

        // A live collector answers at once; the bound is for a machine busy with the rest of the suite.
        let first = await spool.outbox.deliver(now: now, timeout: .seconds(30))
        #expect(first.delivered == 0 && first.pending == 1, "\(first)")
        #expect(first.errors.count == 1 && first.errors[0].contains(down), "\(first.errors)")
        #expect(live.bodies.count == 1)
        // What is left to do is on disk: only the collector that did not answer.
        #expect(try onlyEntry(spool).collectors == [down])

        let back = try await TestReportCollector(port: port)
        defer { Task { await back.close() } }
        let second = await spool.outbox.deliver(now: now + 60, timeout: .seconds(30))
        #expect(
            second
                == {
                    var d = ReportOutbox.Delivery(); d.delivered = 1; return d
                }(), "\(second)")
        #expect(back.bodies.count == 1 && live.bodies.count == 1, "each collector gets the report once")
        let sent = try JSONSerialization.jsonObject(with: Data(try #require(back.bodies.first))) as? [String: Any]
        #expect(sent?["hostname"] as? String == "api.example.com")
        #expect(entries(spool).isEmpty)
        #expect(spool.outbox.pendingCount == 0)
    }

    @Test("plain-HTTP collectors only over an unaltered path (ReportRoute); a pass that tries nothing is not an attempt")
    func plainHTTPOnlyOverUnalteredPath() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let collector = try await TestReportCollector()
        defer { Task { await collector.close() } }
        let now = Date()
        try #require(try spool.write(try report(at: now), deliverTo: [collector.url]) != nil)
        for (connectivity, trust) in [("full", TrustSummary.compromised), ("portal", .portal), ("limited", .ok), ("full", .portal)] {
            let route = ReportRoute(connectivity: connectivity, trust: trust)
            #expect(!route.allowsPlainHTTP && route.allows("https://c.example/r") && !route.allows("HTTP://c.example/r"))
            let held = await spool.outbox.deliver(now: now, timeout: .seconds(30), route: route)
            #expect(held.pending == 1 && held.errors.isEmpty && collector.bodies.isEmpty, "\(connectivity), \(trust): \(held)")
        }
        #expect(try onlyEntry(spool).attempts == 0, "passes that could try no collector are not attempts")
        let clean = await spool.outbox.deliver(now: now, timeout: .seconds(30), route: ReportRoute(connectivity: "full", trust: .degraded))
        #expect(clean.delivered == 1 && collector.bodies.count == 1, "\(clean)")
    }

    @Test(
        "a clock stepped forward drops nothing: a report goes only after 168 failed passes and 7 days; one dated in the future goes too, then; an unreadable entry is set aside, not retried forever"
    )
    func expiryAndGarbage() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let then = Date(timeIntervalSince1970: 1_800_000_000)
        let collector = "http://127.0.0.1:\(port)/pins"
        let written = try #require(try spool.write(try report(at: then), deliverTo: [collector]))
        let stepped = await spool.outbox.deliver(now: then + 365 * 86_400, timeout: .seconds(5))
        #expect(stepped.pending == 1 && stepped.dropped == 0, "a year later by the clock, tried once: kept")
        let name = try #require(entries(spool).first)
        let entryPath = "\(spool.outbox.directory)/\(name)"
        #expect(try ReportOutbox.Entry(reading: Array(try Data(contentsOf: URL(fileURLWithPath: entryPath)))).attempts == 1)
        #expect(written.path.hasSuffix(name))

        // Tried for a week: dropped once older than 7 days (or dated in the future).
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        for (suffix, time) in [("old", then), ("future", then + 30 * 86_400)] {
            let tired = ReportOutbox.Entry(collectors: [collector], report: try report(at: time), attempts: ReportOutbox.maximumAttempts)
            try encoder.encode(tired).write(to: URL(fileURLWithPath: "\(spool.outbox.directory)/\(suffix)-1.json"))
        }
        try Data("{\"collectors\": [\"http://x/\"], \"report\": {".utf8).write(
            to: URL(fileURLWithPath: "\(spool.outbox.directory)/broken-1.json"))
        let late = await spool.outbox.deliver(now: then + 7 * 86_400 + 1, timeout: .seconds(5))
        #expect(late.dropped == 3 && late.pending == 1 && late.delivered == 0, "\(late)")
        #expect(late.errors.filter { $0.contains("after 168 attempts and 7 days") }.count == 2, "\(late.errors)")
        #expect(late.errors.contains { $0.contains("broken-1.json") && $0.contains("set aside") }, "\(late.errors)")
        #expect(entries(spool) == [".broken-1.json.invalid", name].sorted())
    }

    @Test(
        "an outbox that cannot be written: nothing is spooled as if sent; once it can, the next round's identical report is queued, not dropped as a repeat"
    )
    func unwritableOutbox() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let collector = try await TestReportCollector()
        defer { Task { await collector.close() } }
        let now = Date()
        // A file where the outbox directory goes: its writes fail as on a full or read-only disk, even for root.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: spool.outbox.directory))
        let failure = try report(at: now)
        func seen(_ report: PinFailureReport, after seconds: Double) -> PinFailureReport {
            var copy = report
            copy.dateTime = now + seconds
            return copy
        }
        #expect(throws: (any Error).self) { try spool.write(failure, deliverTo: [collector.url]) }
        try FileManager.default.removeItem(atPath: spool.outbox.directory)
        let again = try #require(
            try spool.write(seen(failure, after: 60), deliverTo: [collector.url]), "not a repeat of a report never queued")
        #expect(again.path.hasSuffix("-\(Int(now.timeIntervalSince1970) + 60).json"))
        #expect(await spool.outbox.deliver(now: now + 60, timeout: .seconds(30)).delivered == 1)
        #expect(collector.bodies.count == 1)
        #expect(try spool.write(seen(failure, after: 120), deliverTo: [collector.url]) == nil, "delivered: a repeat now")

        // Queued, then the spool write failed (a crash between the two): the next identical report completes the spool.
        let other = try report(at: now, result: .chainInvalid)
        let interrupted = try #require(try spool.write(seen(other, after: 7200), deliverTo: [collector.url]))
        try FileManager.default.removeItem(atPath: interrupted.path)
        let completed = try #require(try spool.write(seen(other, after: 7260), deliverTo: [collector.url]))
        #expect(completed.path == interrupted.path, "the queued report's own file")
        #expect(spool.outbox.pendingCount == 1, "queued once")
    }

    @Test("past 256 waiting reports the oldest is evicted, and said")
    func outboxEviction() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let first = try report(at: Date(timeIntervalSince1970: 1_800_000_000))
        var evicted: [String] = []
        for index in 0...ReportOutbox.capacity {
            var next = first
            next.dateTime = first.dateTime + Double(index)
            next.hostname = "h\(index).example.com"
            evicted += try #require(try spool.write(next, deliverTo: ["http://127.0.0.1:9/pins"])).evicted
        }
        #expect(evicted.count == 1 && evicted[0].hasPrefix("outbox/") && evicted[0].hasSuffix("-1800000000.json"), "\(evicted)")
        #expect(spool.outbox.pendingCount == ReportOutbox.capacity)
    }
}
