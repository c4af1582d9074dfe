import Foundation
import ServerTrust
import Testing

/// Reports whose collectors did not answer wait in the outbox, and are sent
/// when they come back; a week later, or unreadable, they are dropped.
@Suite("The report outbox")
struct ReportOutboxTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID())").path

    func report(at time: Date) throws -> PinFailureReport {
        try ReportSpoolTests().report(at: time)
    }

    func entries(_ spool: ReportSpool) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: spool.outbox.directory)) ?? []).sorted()
    }

    @Test("a collector that was down gets the report when it is back; each collector once; delivered reports leave the outbox")
    func deliveredWhenBack() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let live = try await TestReportCollector()
        defer { Task { await live.close() } }
        let port = try await TestTLSServer.closedPort()
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
        let name = try #require(entries(spool).first)
        let entry = try ReportOutbox.Entry(reading: Array(try Data(contentsOf: URL(fileURLWithPath: "\(spool.outbox.directory)/\(name)"))))
        #expect(entry.collectors == [down])

        let back = try await TestReportCollector(port: port)
        defer { Task { await back.close() } }
        let second = await spool.outbox.deliver(now: now + 60, timeout: .seconds(30))
        #expect(second == { var d = ReportOutbox.Delivery(); d.delivered = 1; return d }(), "\(second)")
        #expect(back.bodies.count == 1 && live.bodies.count == 1, "each collector gets the report once")
        let sent = try JSONSerialization.jsonObject(with: Data(try #require(back.bodies.first))) as? [String: Any]
        #expect(sent?["hostname"] as? String == "api.example.com")
        #expect(entries(spool).isEmpty)
        #expect(spool.outbox.pendingCount == 0)
    }

    @Test("older than 7 days: dropped undelivered; an unreadable entry is set aside, not retried forever")
    func expiryAndGarbage() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let port = try await TestTLSServer.closedPort()
        let then = Date(timeIntervalSince1970: 1_800_000_000)
        try spool.write(try report(at: then), deliverTo: ["http://127.0.0.1:\(port)/pins"])
        let early = await spool.outbox.deliver(now: then + 6 * 86_400, timeout: .seconds(5))
        #expect(early.pending == 1 && early.dropped == 0)
        try Data("{\"collectors\": [\"http://x/\"], \"report\": {".utf8).write(to: URL(fileURLWithPath: "\(spool.outbox.directory)/broken-1.json"))
        let late = await spool.outbox.deliver(now: then + 7 * 86_400 + 1, timeout: .seconds(5))
        #expect(late.dropped == 2 && late.pending == 0 && late.delivered == 0, "\(late)")
        #expect(late.errors.contains { $0.contains("after 7 days") }, "\(late.errors)")
        #expect(late.errors.contains { $0.contains("broken-1.json") && $0.contains("set aside") }, "\(late.errors)")
        #expect(entries(spool) == [".broken-1.json.invalid"])
        #expect(spool.outbox.pendingCount == 0)
    }
}
