/// One request per user per `interval` (`RecheckTrust`, `CheckConnectivity`):
/// one user cannot spend another's, root is always served, and callers whose
/// user is not known share one budget. Loop-free; the owner supplies the time.
package struct PerUserRateLimit {
    package let interval: Duration
    private var last: [UInt32?: ContinuousClock.Instant] = [:]

    package init(interval: Duration) {
        self.interval = interval
    }

    /// Whether `user` (nil: unknown) may be served `now`; if so, it is counted.
    package mutating func admit(_ user: UInt32?, now: ContinuousClock.Instant = .now) -> Bool {
        if user == 0 { return true }
        // Only the users of the last interval are kept: as many as asked within it.
        last = last.filter { $0.value.duration(to: now) < interval }
        guard last[user] == nil else { return false }
        last[user] = now
        return true
    }
}
