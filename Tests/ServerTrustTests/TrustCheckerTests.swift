import Crypto
import Foundation
import NIOCore
import ServerTrust
import TestTraits
import Testing
import X509

@Suite("Trust checker (servers on 127.0.0.1)", .ownThreads)
struct TrustCheckerTests {
    let root: TestAuthority
    let intermediate: TestAuthority
    let key = P256.Signing.PrivateKey()
    let leaf: Certificate
    let spoolDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("checker-spool-\(UUID())").path

    init() throws {
        root = try .root("Checker Root")
        intermediate = try root.intermediate("Checker Intermediate")
        leaf = try intermediate.leaf(
            ["localhost", "api.test", "old.test", "audit.test", "down.test", "api.corp.test", "old.corp.test"],
            key: Certificate.PrivateKey(key))
    }

    var backup: PublicKeyPin { PublicKeyPin(sha256: Array(repeating: 9, count: 32))! }
    var wrong: PublicKeyPin { PublicKeyPin(sha256: Array(repeating: 6, count: 32))! }

    func entry(
        _ name: String, port: Int, pins: Set<PublicKeyPin>? = nil, expires: Date? = nil, enforce: Bool = true
    ) throws -> HostTrustConfiguration {
        let policy = try pins.map { try TrustPolicy(mode: .publicKey, pins: $0) } ?? TrustPolicy()
        return HostTrustConfiguration(
            pattern: try HostPattern(name), port: port, connect: "127.0.0.1", policy: policy,
            pinSet: try pins.map { try PinSet(pins: $0, expires: expires, enforce: enforce) })
    }

    /// A handshake with chain validation in a debug build, on a machine running every other suite, has
    /// taken more than 500 ms: the default allows 5 s (a round with the silent peer waits that long).
    func checker(_ entries: [HostTrustConfiguration], timeout: Duration = .seconds(5), clock: ClockSource = .system) throws -> TrustChecker
    {
        var configuration = TrustConfiguration()
        configuration.timeout = timeout
        configuration.clock = clock
        for entry in entries { try configuration.hosts.add(entry.pattern, entry) }
        return TrustChecker(configuration: configuration, systemAnchors: [root.certificate], spool: ReportSpool(directory: spoolDirectory))
    }

    @Test("every host at once: per-host verdicts, the overall verdict, reports spooled once", .timeLimit(.minutes(1)))
    func overallVerdicts() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let silent = try await TestTLSServer(silent: ())
        defer { Task { await silent.close() } }
        let good: Set = [try PublicKeyPin(certificate: intermediate.certificate), backup]

        let trusted = try checker([try entry("localhost", port: server.port, pins: good)])
        let okRound = await trusted.checkAll(at: TestAuthority.now)
        #expect(okRound.overall == .ok)
        #expect(okRound.hosts[0].warning == nil, "a backup pin outside the chain")
        // Every pin a key of the current chain: trusted, with a warning.
        let noBackup = try checker([
            try entry(
                "localhost", port: server.port,
                pins: [try PublicKeyPin(certificate: leaf), try PublicKeyPin(certificate: intermediate.certificate)])
        ])
        let warned = await noBackup.checkAll(at: TestAuthority.now).hosts[0]
        #expect(warned.verdict == .trusted)
        #expect(warned.warning?.contains("backup") == true)

        // Pins that expired, a report-only mismatch and a silent peer degrade; nothing is compromised yet.
        let degraded = try checker([
            try entry("localhost", port: server.port, pins: good),
            try entry("old.test", port: server.port, pins: [wrong, backup], expires: TestAuthority.now - 86_400),
            try entry("audit.test", port: server.port, pins: [wrong], enforce: false),
            try entry("down.test", port: silent.port)
        ])
        let round = await degraded.checkAll(path: ["status": "wired", "interface": "eth0"], at: TestAuthority.now)
        #expect(round.overall == .degraded)
        #expect(round.hosts.map(\.verdict) == [.trusted, .pinsExpired, .pinMismatch, .unreachable])
        #expect(round.hosts[2].enforced == false)
        #expect(round.reports.map(\.hostname) == ["audit.test"], "a report-only mismatch is reported")
        #expect(round.reports.first?.path == ["status": "wired", "interface": "eth0"])

        // An enforced mismatch compromises; its report is spooled once, not again on the next round.
        let compromised = try checker([
            try entry("api.test", port: server.port, pins: [wrong, backup]), try entry("down.test", port: silent.port)
        ])
        let first = await compromised.checkAll(at: TestAuthority.now)
        #expect(first.overall == .compromised)
        #expect(first.reports.count == 1)
        #expect(first.reports.first?.validatedCertificateChain.count == 3, "the validated chain ends at the root the server did not send")
        #expect(await compromised.checkAll(at: TestAuthority.now + 60).reports.isEmpty)
        let spooled = try FileManager.default.contentsOfDirectory(atPath: spoolDirectory)
        #expect(spooled.count == 2)
    }

    @Test(
        "behind a captive portal a failed handshake is judged portal, yet a pinned host's failure (enforced or report-only) is spooled with the probe's evidence and not delivered; trusted and unreachable hosts keep their verdicts",
        .timeLimit(.minutes(1)))
    func behindPortal() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let collector = try await TestReportCollector()
        defer { Task { await collector.close() } }
        let good: Set = [try PublicKeyPin(certificate: intermediate.certificate), backup]
        var enforced = try entry("api.test", port: server.port, pins: [wrong, backup])
        enforced.reportURIs = [collector.url]
        var reportOnly = try entry("audit.test", port: server.port, pins: [wrong], enforce: false)
        reportOnly.reportURIs = [collector.url]
        let checker = try checker(
            [
                try entry("localhost", port: server.port, pins: good), enforced, reportOnly,
                try entry("down.test", port: 9)
            ], timeout: .seconds(10))
        let evidence = CaptivePortalEvidence(httpStatus: 302, location: "http://10.1.0.1/login")
        let portal = await checker.checkAll(
            path: ["connectivity": "portal"], at: TestAuthority.now, behindPortal: evidence, deliverReports: true)
        #expect(portal.hosts.map(\.verdict) == [.trusted, .portal, .portal, .unreachable])
        #expect(portal.overall == .portal)
        #expect(portal.hosts[1].reason.hasPrefix("pin-mismatch while connectivity is portal"), "\(portal.hosts[1].reason)")
        #expect(portal.reports.map(\.hostname) == ["api.test", "audit.test"])
        #expect(portal.reports[0].captivePortal == evidence && portal.reports[0].validationResult == "pin-mismatch")
        #expect(portal.reports[1].captivePortal == evidence && !portal.reports[1].enforcePinning, "report-only pins alike")
        let json = try JSONSerialization.jsonObject(with: try portal.reports[0].json()) as? [String: Any]
        #expect((json?["captive-portal"] as? [String: Any])?["http-status"] as? Int == 302, "\(json ?? [:])")
        #expect(collector.bodies.isEmpty, "never delivered over the path that failed them")
        #expect(portal.reportsPending == 2)

        // The same interception on a network whose probe answers: an attack, reports of its own (the portal's
        // do not hold them back); still not delivered.
        let full = await checker.checkAll(path: ["connectivity": "full"], at: TestAuthority.now + 60)
        #expect(full.overall == .compromised && full.reports.map(\.captivePortal) == [nil, nil])
        #expect(collector.bodies.isEmpty && full.reportsPending == 4)
        // Within the hour, another round behind the portal adds nothing (one report per host and pins per hour).
        #expect(await checker.checkAll(at: TestAuthority.now + 120, behindPortal: evidence).reports.isEmpty)
        // A round that passes on a full path delivers what waits.
        let fixed = try self.checker([try entry("localhost", port: server.port, pins: good)], timeout: .seconds(10))
        let trusted = await fixed.checkAll(path: ["connectivity": "full"], at: TestAuthority.now + 180, deliverReports: true)
        #expect(trusted.overall == .ok && trusted.reportsPending == 0, "\(trusted.reportErrors)")
        #expect(collector.bodies.count == 4)
    }

    @Test(
        "a portal the network's API announced is judged portal, its report marked announced; a redirect the API contradicts (it says not captive) is not credible: the failure is judged as it is, and its report carries the contradiction",
        .timeLimit(.minutes(1)))
    func announcedAndContradictedPortal() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let checker = try checker([try entry("api.test", port: server.port, pins: [wrong, backup])], timeout: .seconds(10))
        let announced = CaptivePortalEvidence(
            kind: .announced, httpStatus: 204, location: nil, api: "https://10.1.0.1/capport",
            userPortalURL: "https://10.1.0.1/login")
        let behind = await checker.checkAll(path: ["connectivity": "portal"], at: TestAuthority.now, behindPortal: announced)
        #expect(behind.hosts.map(\.verdict) == [.portal] && behind.overall == .portal)
        #expect(behind.reports.map(\.captivePortal) == [announced])
        let json = try JSONSerialization.jsonObject(with: try behind.reports[0].json()) as? [String: Any]
        let written = json?["captive-portal"] as? [String: Any]
        #expect(
            written?["evidence"] as? String == "announced" && written?["api"] as? String == "https://10.1.0.1/capport", "\(json ?? [:])")

        let contradicted = CaptivePortalEvidence(
            kind: .contradicted, httpStatus: 302, location: "http://10.1.0.1/login", api: "https://10.1.0.1/capport")
        #expect(!contradicted.isCredible && announced.isCredible)
        // An hour later: the spool's once-an-hour limit per host does not hold this one back.
        let attacked = await checker.checkAll(path: ["connectivity": "portal"], at: TestAuthority.now + 3_700, behindPortal: contradicted)
        #expect(attacked.hosts.map(\.verdict) == [.pinMismatch] && attacked.overall == .compromised, "\(attacked.hosts)")
        #expect(attacked.reports.map(\.captivePortal) == [contradicted])
        // A report spooled before the API was read says nothing of its kind: it was the probe's.
        let older = try JSONDecoder().decode(CaptivePortalEvidence.self, from: Data(#"{"http-status":302}"#.utf8))
        #expect(older.kind == .redirect && older.isCredible)
    }

    @Test(
        "an expired certificate while the clock is not synchronised is clock-unsynchronized, not an attack: no report, and expired pins stay enforced; once it is, expired and reported",
        .timeLimit(.minutes(1)))
    func clockNotSynchronized() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        // Expired by the wall clock (the round judges at now, as reachd's do).
        let expired = try intermediate.leaf(
            ["api.test"], key: Certificate.PrivateKey(key), notBefore: Date() - 7 * 86_400, notAfter: Date() - 86_400)
        let server = try await TestTLSServer(chain: [expired, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let flag = spoolDirectory + ".synchronized"
        defer { try? FileManager.default.removeItem(atPath: flag) }
        let pins: Set = [try PublicKeyPin(certificate: intermediate.certificate), backup]
        let checker = try checker([try entry("api.test", port: server.port, pins: pins)], clock: .flagFile(flag))

        let unsynchronized = await checker.checkAll()
        #expect(unsynchronized.hosts.map(\.verdict) == [.clockUnsynchronized], "\(unsynchronized.hosts)")
        #expect(unsynchronized.overall == .degraded && unsynchronized.reports.isEmpty)
        #expect(
            unsynchronized.hosts[0].reason.contains("the clock is not synchronised yet (no \(flag))"), "\(unsynchronized.hosts[0].reason)")

        // Pins whose expiry date the wall clock has passed stay enforced until the clock is synchronised:
        // a clock set ahead must not switch pinning off.
        let valid = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await valid.close() } }
        let stale = try self.checker(
            [try entry("localhost", port: valid.port, pins: [wrong, backup], expires: Date() - 86_400)],
            clock: .flagFile(flag))
        #expect(await stale.checkAll().hosts.map(\.verdict) == [.pinMismatch])

        _ = FileManager.default.createFile(atPath: flag, contents: nil)
        #expect(await stale.checkAll().hosts.map(\.verdict) == [.pinsExpired], "synchronised: the expiry holds")
        let synchronized = await checker.checkAll()
        #expect(synchronized.hosts.map(\.verdict) == [.expired] && synchronized.overall == .compromised)
        #expect(synchronized.reports.map(\.validationResult) == ["expired"])
    }

    @Test(
        "a new report is sent to the entry's report-uri after it is spooled (a report-only mismatch: the path did not fail); a dead endpoint is an error, not a crash"
    )
    func reportURI() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let collector = try await TestReportCollector()
        defer { Task { await collector.close() } }
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let deadPort = closed.port
        var host = try entry("api.test", port: server.port, pins: [wrong, backup], enforce: false)
        host.reportURIs = [collector.url, "http://127.0.0.1:\(deadPort)/pins"]
        // A generous timeout: under a loaded test run the collector may answer late, never not at all.
        let checker = try checker([host], timeout: .seconds(10))
        let round = await checker.checkAll(at: TestAuthority.now)
        #expect(round.reports.count == 1)
        #expect(collector.bodies.count == 1)
        let sent = try JSONSerialization.jsonObject(with: Data(try #require(collector.bodies.first))) as? [String: Any]
        #expect(sent?["validation-result"] as? String == "pin-mismatch")
        #expect(sent?["hostname"] as? String == "api.test")
        #expect(round.reportErrors.count == 1 && round.reportErrors[0].contains("refused"), "\(round.reportErrors)")
        #expect(round.reportsPending == 1, "waiting for the dead collector")
        // The next round's identical report is neither spooled nor sent again to
        // the collector that has it; the dead one is tried again.
        let next = await checker.checkAll(at: TestAuthority.now + 60)
        #expect(collector.bodies.count == 1)
        #expect(next.reports.isEmpty && next.reportsPending == 1 && next.reportErrors.count == 1, "\(next.reportErrors)")
    }

    @Test(
        "an https collector is judged as any host: the genuine one (pinned in the config, dialled at its connect address) takes the report; one with a key the pins do not name, even from a trusted CA, is not sent it"
    )
    func pinnedCollector() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let genuineKey = P256.Signing.PrivateKey()
        let genuine = try await TestReportCollector(
            chain: [
                try intermediate.leaf(["collector.test"], key: Certificate.PrivateKey(genuineKey)),
                intermediate.certificate
            ], key: genuineKey)
        defer { Task { await genuine.close() } }
        // Another key for the same name from the same, trusted, CA: what a CA that misissues gives an interceptor.
        let rogueKey = P256.Signing.PrivateKey()
        let rogue = try await TestReportCollector(
            chain: [
                try intermediate.leaf(["collector.test"], key: Certificate.PrivateKey(rogueKey)),
                intermediate.certificate
            ], key: rogueKey)
        defer { Task { await rogue.close() } }
        var collector = try entry(
            "collector.test", port: genuine.channel.localAddress!.port!,
            pins: [PublicKeyPin(certificate: try intermediate.leaf(["x"], key: Certificate.PrivateKey(genuineKey))), backup])
        collector.reportURIs = []
        var reported = try entry("api.test", port: server.port, pins: [wrong, backup], enforce: false)
        reported.reportURIs = [genuine.url(host: "collector.test"), rogue.url(host: "collector.test")]
        let round = try await checker([reported, collector], timeout: .seconds(10)).checkAll(at: TestAuthority.now)
        #expect(round.hosts.map(\.verdict) == [.pinMismatch, .trusted], "\(round.hosts.map(\.reason))")
        #expect(genuine.bodies.count == 1, "\(round.reportErrors)")
        #expect(rogue.bodies.isEmpty)
        #expect(round.reportErrors.contains { $0.contains("collector.test is not trusted: pin-mismatch") }, "\(round.reportErrors)")
        #expect(round.reportsPending == 1, "waiting for the genuine collector at the other address")
    }

    @Test(
        "one host intercepted for good: its round holds no delivery (the verdict is not held up), and a delivery pass over that path gives the report to the genuine https collector, not to an interceptor of it",
        .timeLimit(.minutes(1)))
    func interceptedHostDoesNotHoldBackReports() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let genuine = try await TestReportCollector(
            chain: [
                try intermediate.leaf(["collector.test"], key: Certificate.PrivateKey(key)),
                intermediate.certificate
            ], key: key)
        defer { Task { await genuine.close() } }
        // An interceptor of the collector: its own CA, which nobody trusts.
        let rogueKey = P256.Signing.PrivateKey()
        let rogueCA = try TestAuthority.root("Interceptor CA")
        let rogue = try await TestReportCollector(
            chain: [try rogueCA.leaf(["collector.test"], key: Certificate.PrivateKey(rogueKey))], key: rogueKey)
        defer { Task { await rogue.close() } }
        var intercepted = try entry("api.test", port: server.port, pins: [wrong, backup])
        intercepted.reportURIs = [genuine.url(host: "collector.test"), rogue.url(host: "collector.test")]
        // Its entry reaches collector.test on 127.0.0.1, under the test's roots.
        var collector = try entry("collector.test", port: genuine.channel.localAddress!.port!)
        collector.reportURIs = []
        let checker = try checker([intercepted, collector], timeout: .seconds(10))
        let round = await checker.checkAll(path: ["connectivity": "full"], at: TestAuthority.now)
        #expect(round.overall == .compromised && round.reportsPending == 1 && genuine.bodies.isEmpty, "\(round)")

        let pass = await checker.spool!.outbox.deliver(
            now: Date(), timeout: .seconds(10), judgedBy: checker,
            route: ReportRoute(connectivity: "full", trust: round.overall))
        #expect(genuine.bodies.count == 1, "\(pass.errors)")
        #expect(rogue.bodies.isEmpty)
        #expect(pass.errors.contains { $0.contains("collector.test is not trusted") }, "\(pass.errors)")
        #expect(pass.pending == 1, "kept for the collector the interceptor answered for")
    }

    @Test("a report that cannot be written is counted and said in the round, not dropped in silence", .timeLimit(.minutes(1)))
    func unwritableReportCounted() async throws {
        defer { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        // The spool's place is taken by a file.
        #expect(FileManager.default.createFile(atPath: spoolDirectory, contents: Data("in the way".utf8)))
        let round = try await checker([try entry("api.test", port: server.port, pins: [wrong, backup])]).checkAll(at: TestAuthority.now)
        #expect(round.overall == .compromised && round.reports.isEmpty)
        #expect(round.reportFailures == 2, "the report, then the outbox's count: \(round.reportErrors)")
        #expect(round.reportErrors.first?.hasPrefix("api.test: a pin-failure report was not written") == true, "\(round.reportErrors)")
    }

    @Test("none without hosts; unknown when no host can be reached")
    func noneAndUnknown() async throws {
        #expect(try await checker([]).checkAll().overall == .none)
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let round = try await checker([try entry("down.test", port: port)]).checkAll()
        #expect(round.overall == .unknown)
        #expect(round.hosts.first?.reason.contains("refused") == true, "\(round.hosts)")
    }

    @Test("a key rotation is carried by the backup pin")
    func keyRotation() async throws {
        // Pins: the current leaf key and a backup key kept offline.
        let backupKey = P256.Signing.PrivateKey()
        let pins: Set = [
            try PublicKeyPin(certificate: leaf),
            try PublicKeyPin(certificate: try intermediate.leaf(["localhost"], key: Certificate.PrivateKey(backupKey)))
        ]
        let rotated = try intermediate.leaf(["localhost"], key: Certificate.PrivateKey(backupKey))
        let server = try await TestTLSServer(chain: [rotated, intermediate.certificate], key: backupKey)
        defer { Task { await server.close() } }
        let round = try await checker([try entry("localhost", port: server.port, pins: pins)]).checkAll(at: TestAuthority.now)
        #expect(round.hosts.first?.verdict == .trusted, "\(round.hosts)")
    }

    @Test("names are looked up in the table: the longest pattern's policy applies")
    func lookupByName() async throws {
        let server = try await TestTLSServer(chain: [leaf, intermediate.certificate], key: key)
        defer { Task { await server.close() } }
        let wildcard = try entry("**.corp.test", port: server.port, pins: [wrong, backup])
        let exact = try entry("api.corp.test", port: server.port, pins: [try PublicKeyPin(certificate: leaf), backup])
        let checker = try checker([wildcard, exact])
        #expect(await checker.checkAll(at: TestAuthority.now).hosts.map(\.host) == ["api.corp.test"], "only exact entries are dialled")
        let viaExact = await checker.check("api.corp.test", connectingTo: "127.0.0.1", at: TestAuthority.now)
        #expect(viaExact.verdict == .trusted)
        #expect(viaExact.pattern == "api.corp.test")
        let viaWildcard = await checker.check("old.corp.test", connectingTo: "127.0.0.1", at: TestAuthority.now)
        #expect(viaWildcard.verdict == .pinMismatch)
        #expect(viaWildcard.pattern == "**.corp.test")
    }
}
