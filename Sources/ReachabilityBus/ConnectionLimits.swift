#if canImport(Glibc)
import SDBus
import Glibc
#endif

/// What local users may hold of the daemon through its world-connectable
/// private socket (docs/security.md, limits against local users): no one but root can starve it of
/// descriptors or grow its memory without bound.
package struct ConnectionLimits: Sendable {
    /// Connections one non-root user may hold at once; more are closed at once.
    package var perUser = 32
    /// Connections all non-root users together may hold.
    package var allUsers = 512
    /// Descriptors kept for the daemon itself (netlink re-dumps, the trust
    /// helper's pipes, the bus) and for root's connections: a non-root
    /// connection is refused when it would land among the last this many.
    package var reservedDescriptors = 64
    /// A peer must finish the D-Bus authentication within this.
    package var authenticationTimeout: Duration = .seconds(5)
    /// Messages (method replies: state signals are never queued behind each
    /// other) waiting to be written to one peer before it is judged not to read
    /// and is dropped.
    package var queuedMessages = 64
    /// A peer whose socket stays full this long, so that it cannot be sent the
    /// current state, is judged not to read and is dropped. One that reads, however
    /// slowly, drains its socket buffer and is sent the latest state long before.
    package var catchUpTimeout: Duration = .seconds(10)

    package init() {}

    /// Raises the soft descriptor limit to what these limits need (the hard one
    /// permitting), never to infinity; the limit in force afterwards.
    @discardableResult
    package func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 1024 }
        // What is open at start (a few dozen) is well inside the reserve's own margin.
        let needed = rlim_t(allUsers + 2 * reservedDescriptors)
        if limit.rlim_cur < needed {
            limit.rlim_cur = min(needed, limit.rlim_max)
            _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
            _ = getrlimit(RLIMIT_NOFILE_VALUE, &limit)
        }
        return Int(clamping: limit.rlim_cur)
    }
}

// RLIMIT_NOFILE is an enum case in glibc's headers under Swift.
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
