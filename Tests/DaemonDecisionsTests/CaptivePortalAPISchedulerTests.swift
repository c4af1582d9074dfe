import DaemonDecisions
import FoundationEssentials
import ReachabilityCore
import Testing
import TrustHelperMessages

/// The captive-portal API's schedule without a loop: queries recorded, timers
/// recorded as they are armed, a clock the test moves.
@Suite("captive-portal API schedule")
struct CaptivePortalAPISchedulerTests {
    final class Harness {
        var started: [(CaptivePortalAPIScheduler.Target, Int)] = []
        var timer: [Duration?] = []
        var now = Date(timeIntervalSince1970: 1_800_000_000)
        var scheduler: CaptivePortalAPIScheduler!

        init() {
            scheduler = CaptivePortalAPIScheduler(
                interval: .seconds(300),
                timer: .init(arm: { [unowned self] in timer.append($0) }, disarm: { [unowned self] in timer.append(nil) }),
                now: { [unowned self] in now },
                start: { [unowned self] in
                    started.append(($0, $1)); return true
                })
        }

        /// Answers the latest query.
        @discardableResult
        func answer(_ json: String) -> Bool {
            let document = try? CaptivePortalAPIDocument.parse(Array(json.utf8))
            return scheduler.finish(
                started.last!.1,
                document.map(CaptivePortalAPIAnswer.init(document:))
                    ?? CaptivePortalAPIAnswer(failure: "not RFC 8908's", invalid: true))
        }
    }

    static let api = CaptivePortalAPIScheduler.Target(
        uri: "https://portal.test/capport", source: .routerAdvertisement,
        interfaceIndex: 2, interfaceName: "wlan0")

    @Test("a new API is asked at once and awaited; captive: asked again after 1 s, doubling up to the interval")
    func captiveBackoff() {
        let harness = Harness()
        harness.scheduler.select(Self.api)
        #expect(harness.started.count == 1 && harness.scheduler.isAwaitingFirstAnswer)
        #expect(harness.scheduler.state == Path.CaptivePortal(api: Self.api.uri, source: .routerAdvertisement, interface: "wlan0"))
        #expect(harness.answer(#"{"captive": true, "user-portal-url": "https://portal.test/login"}"#))
        #expect(!harness.scheduler.isAwaitingFirstAnswer)
        #expect(harness.scheduler.state?.captive == true && harness.scheduler.state?.userPortalURL == "https://portal.test/login")
        for expected in [2, 4, 8] {
            harness.scheduler.timerFired()
            #expect(
                !harness.answer(#"{"captive": true, "user-portal-url": "https://portal.test/login"}"#), "the same answer changes nothing")
            #expect(harness.timer.last == .seconds(expected))
        }
        #expect(harness.timer.prefix(2) == [nil, .seconds(1)], "\(harness.timer)")
        #expect(harness.scheduler.counts.ok == 4)
    }

    @Test("a counted-down session: its end published at once, asked a minute before it, then just after; a short one just after")
    func sessionExpiry() {
        let harness = Harness()
        harness.scheduler.select(Self.api)
        harness.answer(#"{"captive": false, "seconds-remaining": 600, "bytes-remaining": 1000, "can-extend-session": true}"#)
        #expect(harness.scheduler.state?.expires == harness.now + 600)
        #expect(harness.scheduler.state?.secondsRemaining(at: harness.now + 30) == 570)
        #expect(harness.timer.last == .seconds(300), "the interval comes first")
        harness.now += 300
        harness.scheduler.timerFired()
        // Counted again a second later: the same end, no change published.
        #expect(!harness.answer(#"{"captive": false, "seconds-remaining": 299, "bytes-remaining": 1000, "can-extend-session": true}"#))
        #expect(harness.timer.last == .seconds(240), "a minute before the end")
        harness.now += 240
        harness.scheduler.timerFired()
        #expect(harness.answer(#"{"captive": false, "seconds-remaining": 60, "bytes-remaining": 10, "can-extend-session": true}"#))
        #expect(harness.timer.last == .seconds(61), "just after the end")
        harness.now += 61
        harness.scheduler.timerFired()
        #expect(harness.answer(#"{"captive": true, "user-portal-url": "https://portal.test/login"}"#))
        #expect(harness.scheduler.state?.expires == nil && harness.scheduler.state?.captive == true)
    }

    @Test(
        "sessions of every length: more than a minute (and 2 s) left, asked a minute before the end; less, 1 s after it — never after the interval",
        arguments: [(30, 31), (60, 61), (62, 63), (63, 3), (119, 59), (90, 30), (120, 60), (121, 61), (300, 240), (400, 300)])
    func sessionLengths(remaining: Int, next: Int) {
        let harness = Harness()
        harness.scheduler.select(Self.api)
        harness.answer(#"{"captive": false, "seconds-remaining": \#(remaining), "can-extend-session": true}"#)
        #expect(harness.timer.last == .seconds(next), "a session of \(remaining) s")
    }

    @Test(
        "an answer to an earlier API or path is dropped; a malformed one is published as an error and counted; a URI that is not https is never asked"
    )
    func staleMalformedRefused() {
        let harness = Harness()
        harness.scheduler.select(Self.api)
        let first = harness.started[0].1
        harness.scheduler.pathMoved()
        #expect(harness.started.count == 1, "one query at a time: the next follows this one")
        #expect(!harness.scheduler.finish(first, CaptivePortalAPIAnswer(document: .init(captive: false))))
        #expect(harness.started.count == 2 && harness.scheduler.isAwaitingFirstAnswer)
        #expect(harness.answer(#"{"captive": "yes"}"#))
        #expect(harness.scheduler.state?.captive == nil && harness.scheduler.state?.error == "not RFC 8908's")
        #expect(harness.scheduler.counts.invalid == 1 && harness.timer.last == .seconds(1))

        var plain = Self.api
        plain = .init(uri: "http://portal.test/capport", source: .networkd, interfaceIndex: 2, interfaceName: "wlan0")
        harness.scheduler.select(plain)
        #expect(harness.started.count == 2 && !harness.scheduler.isAwaitingFirstAnswer && !harness.scheduler.hasAPI)
        #expect(harness.scheduler.state?.error?.contains("not an https:// URL") == true)
        // What a router put in the option goes into the log and on the bus printable and bounded.
        let hostile = CaptivePortalAPIScheduler.Target(
            uri: "http://x/\n\u{1b}[2J" + String(repeating: "a", count: 5000), source: .routerAdvertisement,
            interfaceIndex: 2, interfaceName: "wlan0")
        #expect(hostile.uri.hasPrefix("http://x/??[2J") && hostile.uri.count == 2048 && hostile.refusal != nil)
        harness.scheduler.select(nil)
        #expect(harness.scheduler.state == nil)
    }
}
