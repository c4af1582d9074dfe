import FoundationEssentials
import Netlink
import Sockets

/// The netlink side of a monitor: the subscribed socket, the query socket and
/// the state they maintain. Not thread-safe: one event loop owns it, polls
/// `fileDescriptor`, and calls `processEvents()` when it is readable. The
/// library's monitor runs it on a thread of its own; reachd on sd-event.
package final class PathEngine {
    private let subscription: RtnetlinkSubscription
    private let query: RtnetlinkQuery
    private var evaluator: PathEvaluator
    package private(set) var state = NetworkState()
    package let options: MonitorOptions

    /// False after an error the engine could not recover from: the path is `unknown`
    /// until `resynchronize()` succeeds.
    package private(set) var isSynchronized = false
    package private(set) var statistics = Statistics()
    /// The interfaces the last evaluated path runs over (carrier and VPN), and whether it was usable.
    private var pathInterfaces: Set<Int32> = []
    private var pathIsUsable = false

    package struct Statistics: Sendable, Equatable {
        /// Kernel messages that mattered.
        package var messages = 0
        /// `ENOBUFS` overruns, each followed by a re-dump.
        package var overruns = 0
        /// Full dumps of links and addresses (start-up included).
        package var dumps = 0
    }

    /// The descriptor to poll for readability.
    package var fileDescriptor: Int32 { subscription.fileDescriptor }

    /// Opens the sockets (inside `options.networkNamespace`, if set) and dumps links and addresses.
    package init(options: MonitorOptions) throws {
        self.options = options
        let facts: any InterfaceFactsSource
        if let namespace = options.networkNamespace {
            let sockets = try NetworkNamespace(path: namespace).perform {
                (try RtnetlinkSubscription(receiveBufferSize: options.receiveBufferSize), try RtnetlinkQuery())
            }
            (subscription, query) = sockets
            facts = NoInterfaceFacts()
        } else {
            subscription = try RtnetlinkSubscription(receiveBufferSize: options.receiveBufferSize)
            query = try RtnetlinkQuery()
            facts = SysfsInterfaceFacts()
        }
        evaluator = PathEvaluator(options: options, facts: facts)
        try resynchronize()
    }

    /// The kernel's receive buffer for events, as granted.
    package var receiveBufferSize: Int { subscription.receiveBufferSize }

    /// Replaces the state with a fresh dump of links and addresses.
    package func resynchronize() throws {
        isSynchronized = false
        let links = try query.links()
        let addresses = try query.addresses()
        state.replace(links: links, addresses: addresses)
        statistics.dumps += 1
        isSynchronized = true
    }

    /// What a batch of events asks of the loop.
    package struct EventsOutcome: Equatable, Sendable {
        /// Evaluate the path now.
        package var evaluate = false
        /// Evaluate it again after each of `recheckDelays`: the batch removed an IPv4 route.
        /// IPv4's `fib_table_delete` broadcasts `RTM_DELROUTE` *before* it unlinks
        /// the route (IPv6 unlinks first), and `RTM_GETROUTE` takes no lock, so a
        /// lookup made at once can still find the route. Nothing else is sent
        /// afterwards: without a second look the stale answer would stand.
        package var recheck = false
    }

    /// When to look again after an IPv4 route removal. The kernel finishes the removal
    /// microseconds after the notification, in the same call — unless it yields there,
    /// which it does when any listener's queue is more than half full; on a loaded
    /// host the deleting thread may then wait for a CPU well past 5 ms (seen in the
    /// test suite). Backing off bounds the wrong answer to half a second in the worst
    /// case, for at most four extra evaluations (~15 µs each).
    package static let recheckDelays: [Duration] = [.microseconds(250), .milliseconds(5), .milliseconds(50), .milliseconds(500)]

    /// Reads every queued event and says what the loop must do. An overrun is
    /// answered with a re-dump: a monitor that carried on would report a stale
    /// state forever.
    package func processEvents() -> EventsOutcome {
        var outcome = EventsOutcome()
        do {
            switch try subscription.drain(limit: 10_000, { message in
                statistics.messages += 1
                let urgent = isUrgent(message)
                if state.apply(message) { outcome.evaluate = true }
                if case let .route(change) = message, change.removed, change.family == .v4 { outcome.recheck = true }
                return urgent
            }) {
            case .drained, .paused:
                return outcome
            case .overrun:
                statistics.overruns += 1
                // The subscription has emptied its queue: the dump is the newest state,
                // and every later event is queued behind it or reported as a new overrun.
                try resynchronize()
                return EventsOutcome(evaluate: true, recheck: true)
            }
        } catch {
            isSynchronized = false
            return EventsOutcome(evaluate: true)
        }
    }

    /// The path's own interface going down, losing carrier or vanishing — or, while
    /// there is no path, a link becoming usable — is the news itself: the path is
    /// evaluated at once rather than after the burst that follows (taking a link down
    /// sends ~200 µs of IPv6 teardown messages after the link message). Other links'
    /// flapping coalesces as any burst does.
    private func isUrgent(_ message: RtnetlinkMessage) -> Bool {
        switch message {
        case let .link(link):
            guard let before = state.links[link.index],
                  before.isUp != link.isUp || before.hasCarrier != link.hasCarrier else { return false }
            return pathInterfaces.contains(link.index) || (!pathIsUsable && link.isUp && link.hasCarrier)
        case let .linkRemoved(index):
            return pathInterfaces.contains(index)
        default:
            return false
        }
    }

    private func remember(_ path: Path) -> Path {
        pathInterfaces = Set([path.interface?.index, path.vpn?.index].compactMap { $0.map(Int32.init) })
        pathIsUsable = path.status.isReachable
        return path
    }

    /// The path to the probes of `options`.
    package func evaluateDefaultPath() -> Path {
        guard isSynchronized else { return remember(.unknown()) }
        let probes = options.probeAddresses
        return remember(evaluator.evaluate([probes.v4, probes.v6], state: state, query: query))
    }

    /// The path to one destination's addresses (already resolved).
    package func evaluate(destination: String, addresses: [IPAddress]) -> Path {
        guard isSynchronized else { return remember(.unknown(destination: destination)) }
        return remember(evaluator.evaluate(addresses, state: state, query: query, destination: destination))
    }
}
