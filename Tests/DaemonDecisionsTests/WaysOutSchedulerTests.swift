import DaemonDecisions
import FoundationEssentials
import ReachabilityCore
import Testing

/// Every way out's schedule without a loop: probes recorded, the timer recorded as it
/// is armed, a clock the test moves.
@Suite("every way out: the schedule of each interface's own probe")
struct WaysOutSchedulerTests {
    final class Harness {
        var started: [(name: String, generation: Int)] = []
        var armed: [Duration?] = []
        var now = ContinuousClock.now
        var scheduler: WaysOutScheduler!

        init(interval: Duration = .seconds(300)) {
            scheduler = WaysOutScheduler(
                interval: interval,
                timer: .init(arm: { [unowned self] in armed.append($0) }, disarm: { [unowned self] in armed.append(nil) }),
                now: { [unowned self] in now }, start: { [unowned self] in started.append(($0.interface!.name, $1)) })
        }

        func answer(_ name: String, _ verdict: Connectivity) -> Bool {
            let last = started.last { $0.name == name }!
            return scheduler.finish(Int32(Self.index(name)), last.generation, verdict)
        }

        static func index(_ name: String) -> Int { name == "eth1" ? 3 : name == "wlan0" ? 4 : 5 }

        static func wayOut(_ name: String, gateway: String? = "10.0.0.1", routed: Bool = true) -> Path {
            Path(
                status: routed ? .wired : .unreachable, reason: routed ? nil : .noRoute,
                interface: .init(name: name, index: index(name), kind: .ethernet), gateway: gateway, ipv4: routed)
        }
    }

    @Test("each new way out is probed at once; its verdict is published; a way out with no route is none, unprobed")
    func firstProbes() {
        let harness = Harness()
        harness.scheduler.update([Harness.wayOut("eth1"), Harness.wayOut("wlan0"), Harness.wayOut("br0", routed: false)])
        #expect(Set(harness.started.map(\.name)) == ["eth1", "wlan0"])
        #expect(harness.scheduler.verdict(of: 5) == Connectivity.none)
        #expect(harness.scheduler.verdict(of: 3) == nil)
        #expect(harness.answer("eth1", .full))
        #expect(harness.answer("wlan0", .portal))
        #expect(harness.scheduler.verdict(of: 3) == .full && harness.scheduler.verdict(of: 4) == .portal)
        #expect(harness.armed.last == .seconds(300), "again after an interval")
    }

    @Test("an unchanged way out is not probed again before its interval; then once per interval")
    func oncePerInterval() {
        let harness = Harness()
        harness.scheduler.update([Harness.wayOut("eth1")])
        _ = harness.answer("eth1", .full)
        harness.scheduler.update([Harness.wayOut("eth1")])
        #expect(harness.started.count == 1)
        harness.now += .seconds(300)
        harness.scheduler.timerFired()
        #expect(harness.started.count == 2)
        #expect(!harness.answer("eth1", .full), "the same verdict again changes nothing")
    }

    @Test("a way out that moves is forgotten and probed again — no sooner than an interval after its last probe, however often it flaps")
    func flapping() {
        let harness = Harness()
        harness.scheduler.update([Harness.wayOut("eth1")])
        _ = harness.answer("eth1", .full)
        harness.now += .seconds(10)
        #expect(harness.scheduler.update([]), "gone: its verdict leaves the document")
        #expect(harness.scheduler.update([Harness.wayOut("eth1", gateway: "10.0.0.2")]) == false)
        #expect(harness.started.count == 1 && harness.scheduler.verdict(of: 3) == nil)
        #expect(harness.armed.last == .seconds(290))
        for _ in 0..<20 {
            harness.scheduler.update([])
            harness.scheduler.update([Harness.wayOut("eth1", gateway: "10.0.0.2")])
        }
        #expect(harness.started.count == 1)
        harness.now += .seconds(290)
        harness.scheduler.timerFired()
        #expect(harness.started.count == 2)
        #expect(harness.answer("eth1", .limited))
    }

    @Test("an answer for a way out that moved meanwhile is dropped; forgetting (resume) probes every routed way out again")
    func staleAnswersAndForgetting() {
        let harness = Harness(interval: .seconds(10))
        harness.scheduler.update([Harness.wayOut("eth1")])
        let first = harness.started[0].generation
        harness.scheduler.update([Harness.wayOut("eth1", gateway: "10.0.0.9")])
        #expect(!harness.scheduler.finish(3, first, .full))
        #expect(harness.scheduler.verdict(of: 3) == nil)
        harness.now += .seconds(10)
        harness.scheduler.timerFired()
        #expect(harness.answer("eth1", .full))
        harness.scheduler.update([Harness.wayOut("eth1", gateway: "10.0.0.9"), Harness.wayOut("br0", routed: false)])
        harness.now += .seconds(10)
        harness.scheduler.forgetVerdicts()
        #expect(harness.scheduler.verdict(of: 3) == nil && harness.scheduler.verdict(of: 5) == Connectivity.none)
        #expect(harness.started.count == 3 && harness.started.last?.name == "eth1")
    }
}
