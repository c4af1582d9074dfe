import Foundation
import TestTraits
import Testing

@testable import ServerTrust

@Suite("Pin-failure reports", .ownThreads)
struct ReportSpoolTests {
    func report(at time: Date, result: TrustVerdict = .pinMismatch) throws -> PinFailureReport {
        let root = try TestAuthority.root("Root")
        let leaf = try root.leaf(["api.example.com"])
        return try PinFailureReport(
            dateTime: time, hostname: "api.example.com", port: 443, notedHostname: "**.example.com",
            includeSubdomains: true, enforcePinning: true, served: [leaf], validated: [leaf, root.certificate],
            knownPins: [PublicKeyPin(sha256: Array(repeating: 7, count: 32))!], validationResult: result,
            knownPinsExpirationDate: TestAuthority.now + 86_400 * 200, path: ["status": "wifi", "interface": "wlan0"])
    }

    @Test("written with the RFC 7469 / TrustKit fields, then not repeated within 24 hours")
    func writeAndDeduplicate() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        let first = try report(at: TestAuthority.now)
        let written = try #require(try spool.write(first)).path
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: written))) as! [String: Any]
        for key in [
            "date-time", "hostname", "port", "noted-hostname", "include-subdomains", "enforce-pinning",
            "served-certificate-chain", "validated-certificate-chain", "known-pins", "validation-result",
            "known-pins-expiration-date", "path"
        ] {
            #expect(object.keys.contains(key), "missing \(key)")
        }
        #expect((object["served-certificate-chain"] as? [String])?.first?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
        #expect((object["known-pins"] as? [String])?.first?.hasPrefix("pin-sha256=\"") == true)

        // The same failure an hour later, seen on another path: not repeated.
        var again = first
        again.dateTime = TestAuthority.now + 3600
        again.path = ["status": "wired", "interface": "eth0"]
        #expect(try spool.write(again) == nil)
        // A different failure of the same host (an interceptor rotating its leaf) within the hour: not written.
        #expect(try spool.write(report(at: TestAuthority.now + 60, result: .chainInvalid)) == nil)
        // A different failure an hour later, or the same a day later: written.
        #expect(try spool.write(report(at: TestAuthority.now + 3601, result: .chainInvalid)) != nil)
        again.dateTime = TestAuthority.now + 86_401
        #expect(try spool.write(again) != nil)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(files.count == 3)
        #expect(!files.contains { $0.hasSuffix(".tmp") }, "no temporary file is left behind")
    }

    @Test(
        "a spool or outbox that cannot be listed is an error, never an empty list: no report written as if the repeat check passed, no pending count of 0, a delivery pass that says so"
    )
    func unreadableSpool() async throws {
        // A file where the directory should be: what a permission error is to root, which CI runs as.
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: parent) }
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: "\(parent)/outbox", contents: Data("not a directory".utf8)))
        let spool = ReportSpool(directory: parent)
        #expect(throws: ReportSpool.SpoolUnreadable.self) {
            try spool.write(try report(at: TestAuthority.now), deliverTo: ["https://c.example/r"])
        }
        #expect(throws: ReportSpool.SpoolUnreadable.self) { try spool.outbox.countPending() }
        let pass = await spool.outbox.deliver(timeout: .seconds(1))
        #expect(pass.failures == 1 && pass.errors.first?.contains("cannot list \(parent)/outbox") == true, "\(pass)")
        // Not there yet is not an error: nothing was ever written.
        #expect(try ReportSpool(directory: "\(parent)/never").outbox.countPending() == 0)
    }

    @Test("bounded by count and by size: past either the oldest reports go, and each eviction is said")
    func bounded() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = ReportSpool(directory: directory)
        var evicted: [String] = []
        let first = try report(at: TestAuthority.now)
        // A new host every time: the per-host hour does not hold them back.
        for index in 0...ReportSpool.capacity {
            var next = first
            next.dateTime = TestAuthority.now + Double(index)
            next.hostname = "h\(index).example.com"
            evicted += try #require(try spool.write(next)).evicted
        }
        #expect(
            evicted.count == 1 && evicted[0].hasPrefix("reports/")
                && evicted[0].hasSuffix("-\(Int(TestAuthority.now.timeIntervalSince1970)).json"), "\(evicted)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == ReportSpool.capacity)
        // And by size: the oldest go until the rest fits.
        let size = try #require(
            try FileManager.default.attributesOfItem(
                atPath: "\(directory)/\(try FileManager.default.contentsOfDirectory(atPath: directory)[0])")[.size] as? Int)
        let bySize = try spool.evictSpool(byteCapacity: size * 10 + size / 2)
        #expect(bySize.count == ReportSpool.capacity - 10, "\(bySize.count)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == 10)
    }
}
