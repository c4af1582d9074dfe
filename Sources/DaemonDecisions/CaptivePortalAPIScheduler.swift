import FoundationEssentials
import ReachabilityCore
import TrustHelperMessages

/// When the network's captive-portal API (RFC 8908) is queried, and what its
/// answers say (docs/connectivity.md). Loop-free: the owner supplies the timer and
/// a way to start one query (reachd-trust), and brings each answer back into
/// `finish` on its own thread.
///
/// Queried at once when the API or the way out changes; while captive or failing,
/// again after 1 s doubling up to `interval` (someone is logging in); while not
/// captive, every `interval` — and, when the API counts the session down, a
/// minute before it ends and again just after, so that an ending session is in
/// the document before it ends and its end is seen when it comes.
package final class CaptivePortalAPIScheduler {
    /// The API of the path's interface, and where it was learnt.
    package struct Target: Equatable, Sendable {
        package var uri: String
        package var source: Path.CaptivePortal.Source
        package var interfaceIndex: Int32
        package var interfaceName: String
        /// Why the URI is not queried (not https): published, never dialled.
        package var refusal: String?

        package init(uri: String, source: Path.CaptivePortal.Source, interfaceIndex: Int32, interfaceName: String) {
            self.source = source
            self.interfaceIndex = interfaceIndex
            self.interfaceName = interfaceName
            let usable = CaptivePortalAPIDocument.isHTTPSURL(uri)
            refusal =
                usable
                ? nil
                : "not an https:// URL of at most \(CaptivePortalAPIDocument.urlLimit) printable bytes: refused (RFC 8908's API is HTTPS only)"
            // What anyone on the link announced goes into the log, the document and the bus: printable and bounded.
            self.uri =
                usable
                ? uri
                : String(
                    String(
                        uri.unicodeScalars.prefix(CaptivePortalAPIDocument.urlLimit).map {
                            $0.value > 0x20 && $0.value < 0x7F ? Character($0) : "?"
                        }))
        }
    }

    /// What the last query found, as the document publishes it; nil without an API.
    package private(set) var state: Path.CaptivePortal?
    package private(set) var target: Target?
    /// Queries answered, refused as malformed, failed (the metrics).
    package private(set) var counts = (ok: 0, invalid: 0, failed: 0)

    private let timer: TrustScheduler.Timer
    private let start: (_ target: Target, _ generation: Int) -> Bool
    private let now: () -> Date
    private var interval: Duration
    private var generation = 0
    private var backoff = Duration.seconds(1)
    private var running = false
    private var queryAgain = false

    /// The minute before a counted-down session ends, when it is queried again.
    package static let expiryWarning: Int64 = 60

    package init(
        interval: Duration, timer: TrustScheduler.Timer, now: @escaping () -> Date = Date.init,
        start: @escaping (_ target: Target, _ generation: Int) -> Bool
    ) {
        self.interval = interval
        self.timer = timer
        self.now = now
        self.start = start
    }

    /// Whether an API is known and has yet to answer: a trust round waits for it, as
    /// for the probe, so that an announced portal is known before failures are judged.
    /// (Every answer leaves `captive` or `error` set; a refused URI has its `error` from the start.)
    package var isAwaitingFirstAnswer: Bool { state != nil && state?.captive == nil && state?.error == nil }

    /// The API of the freshly evaluated path (nil: none). Another API, or another
    /// interface, forgets what was found and queries at once.
    package func select(_ fresh: Target?) {
        guard fresh != target else { return }
        target = fresh
        state = fresh.map { Path.CaptivePortal(api: $0.uri, source: $0.source, interface: $0.interfaceName, error: $0.refusal) }
        restart()
    }

    /// Whether an API is known that is asked (one that is not https is never asked).
    package var hasAPI: Bool { target != nil && target?.refusal == nil }
    /// Whether a query is running.
    package var isRunning: Bool { running }

    /// The way out changed under the same API (a new address, another router): ask again.
    package func pathMoved() {
        guard target != nil else { return }
        restart()
    }

    /// The host slept: the answer may belong to another network. It is forgotten (the API
    /// is known, its answer not) and the API asked again at once.
    package func forgetAnswer() {
        guard let target else { return }
        state = Path.CaptivePortal(api: target.uri, source: target.source, interface: target.interfaceName, error: target.refusal)
        restart()
    }

    /// `CheckConnectivity()`, or the probe's verdict changed: ask now.
    package func queryNow() {
        guard target != nil else { return }
        restart()
    }

    /// The interval changed (a reload).
    package func reconfigure(interval: Duration) { self.interval = interval }

    package func timerFired() { startQuery() }

    private func restart() {
        generation += 1
        backoff = .seconds(1)
        timer.disarm()
        startQuery()
    }

    private func startQuery() {
        guard let target, target.refusal == nil else { return }
        guard !running else {
            queryAgain = true
            return
        }
        running = start(target, generation)
        if !running { schedule(after: backoffStep()) }
    }

    /// A query ended. Returns whether what the document says changed.
    package func finish(_ finished: Int, _ answer: CaptivePortalAPIAnswer) -> Bool {
        running = false
        if queryAgain {
            queryAgain = false
            if finished != generation {
                startQuery()
                return false
            }
        }
        guard finished == generation, let target else { return false }
        let before = state
        var fresh = Path.CaptivePortal(api: target.uri, source: target.source, interface: target.interfaceName)
        if let document = answer.document {
            counts.ok += 1
            fresh.captive = document.captive
            fresh.userPortalURL = document.userPortalURL
            fresh.venueInfoURL = document.venueInfoURL
            fresh.bytesRemaining = document.bytesRemaining
            fresh.canExtendSession = document.canExtendSession
            if let seconds = document.secondsRemaining {
                let expires = Date(timeIntervalSince1970: (now().timeIntervalSince1970 + Double(seconds)).rounded(.down))
                // The same session counted again is the same end, give or take the query's own second.
                if let kept = before?.expires, abs(kept.timeIntervalSince(expires)) <= 2 {
                    fresh.expires = kept
                } else {
                    fresh.expires = expires
                }
            }
        } else {
            if answer.invalid { counts.invalid += 1 } else { counts.failed += 1 }
            fresh.error = answer.failure ?? "no answer"
        }
        state = fresh
        schedule(after: nextQuery(fresh))
        return fresh != before
    }

    /// When to ask again after `found` (docs/connectivity.md): a session with more
    /// than `expiryWarning` left — give or take the 2 s an answer's own count may be
    /// off — is asked a minute before its end; one with less, 1 s after its end
    /// (the answer a minute before the end lands here too). Never later than `interval`.
    private func nextQuery(_ found: Path.CaptivePortal) -> Duration {
        guard found.captive == false else { return backoffStep() }
        backoff = .seconds(1)
        guard let remaining = found.secondsRemaining(at: now()) else { return interval }
        let warning = Self.expiryWarning
        let next: Int64 = remaining > warning + 2 ? remaining - warning : remaining + 1
        return min(interval, .seconds(next))
    }

    private func backoffStep() -> Duration {
        defer { backoff = min(backoff * 2, interval) }
        return backoff
    }

    private func schedule(after delay: Duration) { timer.arm(delay) }
}
