import ReachabilityContract

/// The calls that wait for the daemon on the calling thread, apart from the `async`
/// ones: a call spelled `try await reachd.currentPath()` is always the `async` one,
/// in a function as in top-level code (Swift picks a synchronous overload of the same
/// name over an `async` one in top-level code, and the `await` would block a thread
/// of the caller's executor for as long as the daemon takes).
extension ReachabilityClient {
    /// The daemon's calls for code that cannot `await` — a synchronous `main`, a
    /// callback of a C library — each waiting on the calling thread for the answer:
    /// `reachd.blocking.currentPath()`. `async` code calls the client's own methods.
    public struct Blocking: Sendable {
        let client: ReachabilityClient

        /// The daemon's current path.
        public func currentPath() throws(Failure) -> Path {
            try ReachabilityClient.decode(try client.call(.describe))
        }

        /// Every interface the daemon sees, in index order: the inventory of
        /// `reachctl status --interfaces` (the path lists only the available ones).
        public func interfaces() throws(Failure) -> [InterfaceChange] {
            try ReachabilityClient.decodeInterfaces(try client.call(.interfaces))
        }

        /// The daemon's path to a host name or address (like `reachctl route`).
        ///
        /// The daemon resolves a name with the system resolver, which can take seconds
        /// when no DNS server answers: the caller says how long its thread may wait.
        /// - Parameters:
        ///   - destination: A host name or an IP address.
        ///   - timeout: How long to wait for the answer; past it the call fails.
        public func route(to destination: String, timeout: Duration) throws(Failure) -> Path {
            try ReachabilityClient.decode(try client.call(.route, destination, timeout: timeout))
        }

        /// The latest trust round: the overall verdict, each host's verdict and reason.
        public func trustStatus() throws(Failure) -> TrustStatus {
            try ReachabilityClient.decodeTrust(try trustStatusDocument())
        }

        /// The same as JSON, as the daemon wrote it (what `reachctl trust status --json` prints).
        public func trustStatusDocument() throws(Failure) -> String {
            try client.call(.trustStatus)
        }

        /// Asks the daemon for a trust round now. Any user may, at most once per 10 s
        /// (root always); a round starts 2 s after the one before at the earliest. The
        /// verdict arrives on ``ReachabilityClient/trustChanges`` (and in the path's `trust`).
        public func recheckTrust() throws(Failure) {
            _ = try client.call(.recheckTrust)
        }

        /// Asks the daemon to probe connectivity now (at most once per 10 s) and returns the
        /// state it published after the probe. Fails when no `[connectivity] uri` is configured.
        public func checkConnectivity() throws(Failure) -> Connectivity {
            try ReachabilityClient.decodeConnectivity(try client.call(.checkConnectivity))
        }

        /// Asks the daemon to re-read its config (root only).
        public func reload() throws(Failure) {
            _ = try client.call(.reload)
        }
    }

    /// The calls that wait on the calling thread, for code that cannot `await`.
    public var blocking: Blocking { Blocking(client: self) }

    // The synchronous spellings of earlier releases, kept only to say where they went: left
    // callable, top-level code that wrote `try await` would still reach them.

    /// Moved: `try await currentPath()`, or `blocking.currentPath()` where nothing can await.
    @available(*, unavailable, message: "blocks its thread: `try await reachd.currentPath()`, or `reachd.blocking.currentPath()`")
    public func currentPath() throws(Failure) -> Path { try blocking.currentPath() }

    /// Moved: `try await interfaces()`, or `blocking.interfaces()`.
    @available(*, unavailable, message: "blocks its thread: `try await reachd.interfaces()`, or `reachd.blocking.interfaces()`")
    public func interfaces() throws(Failure) -> [InterfaceChange] { try blocking.interfaces() }

    /// Moved: `try await route(to:)`, or `blocking.route(to:timeout:)`.
    @available(*, unavailable, message: "blocks its thread: `try await reachd.route(to:)`, or `reachd.blocking.route(to:timeout:)`")
    public func route(to destination: String) throws(Failure) -> Path { try blocking.route(to: destination, timeout: .seconds(25)) }

    /// Moved: `try await trustStatus()`, or `blocking.trustStatus()`.
    @available(*, unavailable, message: "blocks its thread: `try await reachd.trustStatus()`, or `reachd.blocking.trustStatus()`")
    public func trustStatus() throws(Failure) -> TrustStatus { try blocking.trustStatus() }

    /// Moved: `try await trustStatusDocument()`, or `blocking.trustStatusDocument()`.
    @available(
        *, unavailable, message: "blocks its thread: `try await reachd.trustStatusDocument()`, or `reachd.blocking.trustStatusDocument()`"
    )
    public func trustStatusDocument() throws(Failure) -> String { try blocking.trustStatusDocument() }

    /// Moved: `try await recheckTrust()`, or `blocking.recheckTrust()`.
    @available(*, unavailable, message: "blocks its thread: `try await reachd.recheckTrust()`, or `reachd.blocking.recheckTrust()`")
    public func recheckTrust() throws(Failure) { try blocking.recheckTrust() }

    /// Moved: `try await checkConnectivity()`, or `blocking.checkConnectivity()`.
    @available(
        *, unavailable, message: "blocks its thread: `try await reachd.checkConnectivity()`, or `reachd.blocking.checkConnectivity()`"
    )
    public func checkConnectivity() throws(Failure) -> Connectivity { try blocking.checkConnectivity() }

    /// Moved: `try await reload()`, or `blocking.reload()`.
    @available(*, unavailable, message: "blocks its thread: `try await reachd.reload()`, or `reachd.blocking.reload()`")
    public func reload() throws(Failure) { try blocking.reload() }
}
