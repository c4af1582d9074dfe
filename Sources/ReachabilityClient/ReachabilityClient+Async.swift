import Dispatch
import ReachabilityContract
import Synchronization

/// The daemon's calls, for `async` code: a call waits on the client's connection, and no
/// thread — of the caller's executor or any other — is held while the daemon answers (a
/// call may wait up to 25 s for a busy daemon). Code that cannot `await` uses ``ReachabilityClient/blocking``.
extension ReachabilityClient {
    /// The daemon's current path.
    public func currentPath() async throws(Failure) -> Path { try Self.decode(try await call(.describe)) }

    /// Every interface the daemon sees, in index order: the inventory of
    /// `reachctl status --interfaces` (the path lists only the available ones).
    public func interfaces() async throws(Failure) -> [InterfaceChange] { try Self.decodeInterfaces(try await call(.interfaces)) }

    /// The daemon's path to a host name or address (like `reachctl route`).
    /// - Parameters:
    ///   - destination: A host name or an IP address; the daemon resolves a name with the system resolver.
    ///   - timeout: How long to wait for the answer (a resolver that gets no answer takes seconds).
    public func route(to destination: String, timeout: Duration = .seconds(25)) async throws(Failure) -> Path {
        try Self.decode(try await call(.route, destination, timeout: timeout))
    }

    /// The latest trust round: the overall verdict, each host's verdict and reason.
    public func trustStatus() async throws(Failure) -> TrustStatus { try Self.decodeTrust(try await trustStatusDocument()) }

    /// The latest trust round as JSON, as the daemon wrote it (what `reachctl trust status --json` prints).
    public func trustStatusDocument() async throws(Failure) -> String { try await call(.trustStatus) }

    /// Asks the daemon for a trust round now. Any user may, at most once per 10 s
    /// (root always); the verdict arrives on ``trustChanges`` (and in the path's `trust`).
    public func recheckTrust() async throws(Failure) { _ = try await call(.recheckTrust) }

    /// Asks the daemon to probe connectivity now (at most once per 10 s) and returns the
    /// state it published after the probe. Fails when no `[connectivity] uri` is configured.
    public func checkConnectivity() async throws(Failure) -> Connectivity {
        try Self.decodeConnectivity(try await call(.checkConnectivity))
    }

    /// Asks the daemon to re-read its config (root only).
    public func reload() async throws(Failure) { _ = try await call(.reload) }

    // MARK: Waiting

    /// Why ``wait(for:timeout:)`` gave up.
    public enum WaitFailure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The daemon answered, and its path did not meet the condition in time: the last path it published.
        case timedOut(last: Path)
        /// Waiting for `.online`: the path was reachable, but connectivity stayed `unknown` —
        /// the daemon has no `[connectivity] uri` (the default; docs/connectivity.md), or
        /// its probe has not answered yet.
        case connectivityUnknown(last: Path)
        /// No daemon answered while the client waited: why the last attempt failed.
        case noDaemon(reason: String)
        /// The waiting task was cancelled.
        case cancelled

        public var description: String {
            switch self {
            case let .timedOut(last): "timed out: the path is \(last)"
            case .connectivityUnknown:
                "timed out: connectivity is unknown (no [connectivity] uri is configured, or the probe has not answered)"
            case let .noDaemon(reason): "no reachd: \(reason)"
            case .cancelled: "cancelled"
            }
        }
    }

    /// Waits until the daemon's path meets `condition` — at once if it already does —
    /// and returns that path (`reachctl wait`, Android's `requestNetwork` with a
    /// timeout, what Alamofire's `OfflineRetrier` waits for). While no daemon answers
    /// the client keeps trying; when `timeout` passes it says why it gave up: no
    /// daemon, connectivity unknown, or the last path.
    public func wait(for condition: PathCondition, timeout: Duration) async throws(WaitFailure) -> Path {
        enum Outcome: Sendable {
            case met(Path)
            case gaveUp(ConnectionState)
        }
        final class Latest: Sendable { let path = Mutex<Path?>(nil) }
        let last = Latest()
        let outcome = await withTaskGroup(of: Outcome?.self) { group in
            let paths = paths
            group.addTask {
                for await path in paths {
                    last.path.withLock { $0 = path }
                    if condition.isMet(by: path) { return .met(path) }
                }
                return nil
            }
            group.addTask { [self] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return nil }
                return .gaveUp(connectionState)
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch outcome {
        case let .met(path)?:
            return path
        case let .gaveUp(state)?:
            let path = last.path.withLock { $0 }
            if case let .noDaemon(reason) = state { throw .noDaemon(reason: reason) }
            guard let path else { throw .noDaemon(reason: "no answer yet") }
            if condition == .online, path.status.isReachable, path.connectivity == .unknown { throw .connectivityUnknown(last: path) }
            throw .timedOut(last: path)
        case nil:
            throw .cancelled
        }
    }

    /// The same wait, nil for any reason it gave up: ``wait(for:timeout:)`` says which.
    public func wait(until condition: PathCondition, timeout: Duration) async -> Path? {
        try? await wait(for: condition, timeout: timeout)
    }
}
