/// One connection an object is served on, and what it has been sent of the
/// object's state: the back-pressure rule of every object served here
/// (io.reachd.Reachability1 and the NetworkManager-compatible surface).
///
/// The objects' signals carry state, not history: a connection that cannot take
/// more now — its socket is full, or it has not finished authenticating — is not
/// queued further. Once it can, it is sent what changed since, in one go. So
/// whatever a subscriber missed in between, the last thing it holds is the
/// object's current state, and a slow reader costs the daemon a socket buffer
/// and one partly written message, never a backlog.
open class StateSubscription<State: Equatable> {
    package let connection: BusConnection
    /// What the connection holds, as far as the daemon is concerned: it was
    /// handed to sd-bus (and so reaches the peer in order, or not at all).
    package var sent: State
    /// Since when a change is waiting for the connection to take more; nil while it keeps up.
    package var behindSince: ContinuousClock.Instant?

    package init(connection: BusConnection, holding state: State) {
        self.connection = connection
        sent = state
    }

    package var canTakeMore: Bool { connection.canTakeMore }

    package var isBehind: Bool { behindSince != nil }

    /// Whether anything is waiting to be sent (subclasses add what they queue).
    open func isUpToDate(with state: State) -> Bool { sent == state }

    /// The rule: when something waits, `send` it if the connection can take more (it
    /// sends what differs from `sent`, and whatever else waits while the connection takes
    /// it); `state` is then what the connection holds, and it stays behind only while
    /// something still waits. A connection that cannot take more is behind from `now`,
    /// and the object calls again once it drained.
    package final func bringUpToDate(with state: State, now: ContinuousClock.Instant, send: () -> Void) {
        guard !isUpToDate(with: state) else { return }
        guard canTakeMore else {
            if behindSince == nil { behindSince = now }
            return
        }
        send()
        sent = state
        behindSince = isUpToDate(with: state) ? nil : (behindSince ?? now)
    }
}
