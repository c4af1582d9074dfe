import Dispatch

/// The calls, for `async` code: each runs the blocking call on a thread of the
/// global pool (D-Bus calls wait up to 25 s for a busy daemon), so no task of the
/// caller's executor is held while the daemon answers.
extension ReachabilityClient {
    private func offThread<Value: Sendable>(_ body: @escaping @Sendable () throws(Failure) -> Value) async throws(Failure) -> Value {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, Failure>, Never>) in
            DispatchQueue.global().async { continuation.resume(returning: Result { () throws(Failure) in try body() }) }
        }
        return try result.get()
    }

    /// The daemon's current path.
    public func currentPath() async throws(Failure) -> Path { try await offThread { () throws(Failure) in try self.currentPath() } }

    /// Every interface the daemon sees, in index order.
    public func interfaces() async throws(Failure) -> [InterfaceChange] { try await offThread { () throws(Failure) in try self.interfaces() } }

    /// The daemon's path to a host name or address (like `reachctl route`).
    public func route(to destination: String) async throws(Failure) -> Path {
        try await offThread { () throws(Failure) in try self.route(to: destination) }
    }

    /// The latest trust round.
    public func trustStatus() async throws(Failure) -> TrustStatus { try await offThread { () throws(Failure) in try self.trustStatus() } }

    /// The latest trust round as JSON, as the daemon wrote it.
    public func trustStatusDocument() async throws(Failure) -> String { try await offThread { () throws(Failure) in try self.trustStatusDocument() } }

    /// Asks for a trust round now (at most once per 10 s per user).
    public func recheckTrust() async throws(Failure) { try await offThread { () throws(Failure) in try self.recheckTrust() } }

    /// Probes connectivity now and returns the state the daemon published after the probe.
    public func checkConnectivity() async throws(Failure) -> Connectivity { try await offThread { () throws(Failure) in try self.checkConnectivity() } }

    /// Asks the daemon to re-read its config (root only).
    public func reload() async throws(Failure) { try await offThread { () throws(Failure) in try self.reload() } }

    /// Waits until the daemon's path meets `condition` — at once if it already does —
    /// and returns that path; nil when `timeout` passes first (`reachctl wait`,
    /// Android's `requestNetwork` with a timeout, what Alamofire's `OfflineRetrier`
    /// waits for). While the daemon cannot be reached, the wait goes on: the
    /// subscription reconnects. Cancelling the task ends the wait with nil.
    public func wait(until condition: PathCondition, timeout: Duration) async -> Path? {
        await condition.firstPath(in: paths, timeout: timeout)
    }
}
