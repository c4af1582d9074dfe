import FoundationEssentials
import IPAddresses
import Netlink
import SystemCalls

/// The netlink side of a monitor: the subscribed socket, the query socket and
/// the state they maintain. Not thread-safe: one event loop owns it, polls
/// `fileDescriptor`, and calls `processEvents()` when it is readable. The
/// library's monitor runs it on a thread of its own; reachd on sd-event.
package final class PathEngine {
    private let subscription: any KernelEvents
    /// The kernel's answers to lookups, asked again only where a message says they may have changed.
    private let query: RouteLookupMemo
    /// The time every decision is made at: the system's, or a test's virtual clock.
    package let clock: LoopClock
    private var evaluator: PathEvaluator
    package private(set) var state = NetworkState()
    package let options: MonitorOptions

    /// False after an error the engine could not recover from: the path is `unknown`
    /// until `resynchronize()` succeeds.
    package private(set) var isSynchronized = false
    package private(set) var statistics = Statistics()
    /// The interfaces the last evaluation looked up or runs over (carrier, VPN, their
    /// lower devices), and whether the path was usable.
    private var pathInterfaces: Set<Int32> = []
    /// Interfaces that may have a route to a global address: every one the last dump
    /// found (its routes were not read), and since then those a route message named.
    /// A pod's veth, which only ever gets link-local and multicast routes, is never here.
    private var routedInterfaces: Set<Int32> = []
    private var pathIsUsable = false
    /// The path's interfaces whose IPv4 routes the last events took away without a message
    /// (`takesIPv4Routes`), until an evaluation has looked.
    private var flushing: Set<Int32> = []

    /// The last evaluation of the watched path found a route through an interface whose IPv4
    /// routes were being flushed: a link announced down, or an IPv4 address announced gone,
    /// keeps its routes for a moment, and the flush sends nothing (BENCHMARKS.md §30). Looked
    /// at once, a host with two uplinks would stay `unreachable`: the path is looked at again
    /// (`recheckDelays`). Where the first look already finds them gone, it costs nothing more.
    package private(set) var sawRoutesBeingFlushed = false
    /// The addresses the last watched evaluation asked about: only routes that cover one matter.
    private var watched: [IPAddress]
    /// The configured resolvers, judged with every default path (nil: DNS is not
    /// followed); routes that cover one matter.
    package var dnsServers: DNSServers? {
        didSet { dnsAddresses = dnsServers?.servers.map(\.address) ?? [] }
    }
    private var dnsAddresses: [IPAddress] = []
    /// Destinations someone else watches through this engine (the daemon's
    /// `WatchPath()` subscriptions): routes that cover one matter too.
    package var alsoWatched: [IPAddress] = []
    /// RFC 8910 captive-portal URIs from router advertisements: per interface, the
    /// latest each router sent. Forgotten with the link (down or gone) and once the
    /// router is no longer the interface's next hop (its lifetime ended).
    private var announcedPortals: [Int32: [IPAddress: String]] = [:]
    /// RFC 8781 NAT64 prefixes from router advertisements: per interface, the latest each
    /// router sent and until when it holds. Forgotten like the portals, and at the end of
    /// their lifetime; a lifetime of 0 withdraws a router's at once.
    private var announcedNAT64: [Int32: [IPAddress: (prefix: NAT64Prefix, lifetime: Int, expires: ContinuousClock.Instant)]] = [:]
    /// The prefix the daemon found by RFC 7050 (`ipv4only.arpa` through the path's
    /// resolvers) on an interface where no router announced one.
    package var discoveredNAT64: (prefix: NAT64Prefix, interface: Int32)?
    /// Interfaces changed since the evaluator last looked.
    private var touched: Set<Int32> = []
    /// Interfaces changed since `takeInterfaceChanges()`, with the link as last seen.
    private var pendingInterfaces: [Int32: Link] = [:]

    package struct Statistics: Sendable, Equatable {
        /// Kernel messages that mattered.
        package var messages = 0
        /// `ENOBUFS` overruns, each followed by a re-dump.
        package var overruns = 0
        /// Full dumps of links and addresses (start-up included).
        package var dumps = 0
        /// Evaluations of the default path: what a change that cannot move it never costs.
        package var evaluations = 0

        package init() {}

        /// Two engines' counts together (the daemon's across reloads).
        package static func + (lhs: Statistics, rhs: Statistics) -> Statistics {
            var sum = Statistics()
            sum.messages = lhs.messages + rhs.messages
            sum.overruns = lhs.overruns + rhs.overruns
            sum.dumps = lhs.dumps + rhs.dumps
            sum.evaluations = lhs.evaluations + rhs.evaluations
            return sum
        }
    }

    /// The descriptor to poll for readability.
    package var fileDescriptor: Int32 { subscription.fileDescriptor }

    /// Opens the sockets (inside `options.networkNamespace`, if set; `options.kernel`'s instead,
    /// if set) and dumps links and addresses.
    package convenience init(options: MonitorOptions) throws {
        if let kernel = options.kernel {
            let (events, queries) = try kernel.open()
            try self.init(options: options, events: events, queries: queries, facts: NoInterfaceFacts())
        } else if let namespace = options.networkNamespace {
            let sockets = try NetworkNamespace(path: namespace).perform {
                (try RtnetlinkSubscription(receiveBufferSize: options.receiveBufferSize), try RtnetlinkQuery())
            }
            try self.init(options: options, events: sockets.0, queries: sockets.1, facts: NoInterfaceFacts())
        } else {
            try self.init(
                options: options, events: RtnetlinkSubscription(receiveBufferSize: options.receiveBufferSize),
                queries: RtnetlinkQuery(), facts: SysfsInterfaceFacts())
        }
    }

    /// Watches another kernel than the sockets': what a test's embedded kernel plugs into. Dumps links and addresses.
    package init(
        options: MonitorOptions, events: any KernelEvents, queries: any KernelQueries,
        facts: any InterfaceFactsSource, clock: LoopClock = .system
    ) throws {
        self.options = options
        watched = [options.probeAddresses.v4, options.probeAddresses.v6]
        subscription = events
        query = RouteLookupMemo(queries)
        self.clock = clock
        evaluator = PathEvaluator(options: options, facts: facts)
        try resynchronize()
    }

    /// The kernel's receive buffer for events, as granted.
    package var receiveBufferSize: Int { subscription.receiveBufferSize }

    /// Replaces the state with a fresh dump of links and addresses. The interfaces that
    /// differ from what was held are reported as changed, like the events they replace.
    package func resynchronize() throws {
        isSynchronized = false
        query.forgetAll()
        let links = try query.links()
        let addresses = try query.addresses()
        let before = state
        state.replace(links: links, addresses: addresses)
        routedInterfaces = Set(state.links.keys)
        evaluator.rebuild(state)
        touched = []
        if tracksInterfaces {
            for index in Set(before.links.keys).union(state.links.keys)
            where before.links[index] != state.links[index] || before.addresses(of: index) != state.addresses(of: index) {
                pendingInterfaces[index] = state.links[index] ?? before.links[index]!
            }
        }
        statistics.dumps += 1
        isSynchronized = true
    }

    /// What a batch of events asks of the loop.
    package struct EventsOutcome: Equatable, Sendable {
        /// Evaluate the path now.
        package var evaluate = false
        /// Evaluate it again after each of `recheckDelays`: the batch removed an IPv4 route
        /// or changed a next hop (whose removal takes its routes after the message, too).
        /// IPv4's `fib_table_delete` broadcasts `RTM_DELROUTE` *before* it unlinks
        /// the route (IPv6 unlinks first), and `RTM_GETROUTE` takes no lock, so a
        /// lookup made at once can still find the route. Nothing else is sent
        /// afterwards: without a second look the stale answer would stand.
        /// (Routes flushed without a message: `sawRoutesBeingFlushed`.)
        package var recheck = false
        /// Interfaces changed: `takeInterfaceChanges()` has something (only while `tracksInterfaces`).
        package var interfacesChanged = false
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
    ///
    /// Each event costs the same however many interfaces there are: it is applied
    /// to the state, and the path is evaluated only when the event could change the
    /// kernel's answer or the document (`matters`). A pod's veth coming and going on
    /// a container host costs a parse, not two route lookups and a publication.
    package func processEvents() -> EventsOutcome {
        var outcome = EventsOutcome()
        do {
            switch try subscription.drain(
                limit: 10_000,
                { message in
                    statistics.messages += 1
                    query.forget(movedBy: message)
                    if announce(message) { outcome.evaluate = true }
                    let before: Link? =
                        switch message {
                        case let .link(link): state.links[link.index]
                        case let .linkRemoved(index): state.links[index]
                        default: nil
                        }
                    if case let .linkRemoved(index) = message { routedInterfaces.remove(index) }
                    switch state.apply(message) {
                    case .none:
                        break
                    case let .interface(index):
                        touched.insert(index)
                        if pathInterfaces.contains(index), takesIPv4Routes(message, before: before) { flushing.insert(index) }
                        if tracksInterfaces {
                            if let seen = state.links[index] ?? before {
                                pendingInterfaces[index] = seen
                                outcome.interfacesChanged = true
                            }
                        }
                        if matters(index, before: before) { outcome.evaluate = true }
                    case let .routing(change):
                        guard let change else {
                            outcome.evaluate = true // a rule or a next hop: any lookup may be answered otherwise
                            // A next hop's removal is announced before the routes using it are unlinked.
                            if case .nextHop = message { outcome.recheck = true }
                            break
                        }
                        if !change.removed, change.mayCarryGlobalTraffic { routedInterfaces.formUnion(change.outputInterfaces) }
                        guard
                            watched.contains(where: change.covers) || alsoWatched.contains(where: change.covers)
                                || dnsAddresses.contains(where: change.covers)
                        else { break }
                        outcome.evaluate = true
                        if change.removed, change.family == .v4 { outcome.recheck = true }
                    }
                    return isUrgent(message, before: before)
                })
            {
            case .drained, .paused:
                // Now, not at the next evaluation: on a node whose path does not move, pods
                // would otherwise pile up here (and their kinds in the evaluator) for ever.
                refresh()
                return outcome
            case .overrun:
                statistics.overruns += 1
                // The subscription has emptied its queue: the dump is the newest state,
                // and every later event is queued behind it or reported as a new overrun.
                try resynchronize()
                return EventsOutcome(evaluate: true, recheck: true, interfacesChanged: tracksInterfaces && !pendingInterfaces.isEmpty)
            }
        } catch {
            isSynchronized = false
            return EventsOutcome(evaluate: true)
        }
    }

    /// Asks the kernel everything again at the next evaluation: a re-check distrusts what
    /// the last look was told (an IPv4 removal announced before it takes effect, routes
    /// flushed without a message), and a timer is all that says something may have changed.
    package func lookAgain() {
        query.forgetAll()
    }

    /// The kernel's answers kept for the next evaluation (tests).
    package var answersKept: Int { query.count }

    /// Whether a change of interface `index` can change the path or its document.
    /// The kernel stays the judge of the path: this only rules out interfaces it
    /// cannot route the watched addresses through without telling us by a route
    /// event — ones that neither carried nor were named by the last lookups, are not
    /// (and were not) available, are no port or lower device of the path's
    /// interface, and did not regain carrier. A link that goes down takes its IPv4
    /// routes with it silently, but routes the lookups did not pick cannot change
    /// their answer by going; one that comes up gets its routes back only with messages.
    /// While there is no path, every link that is no port matters: it explains why.
    private func matters(_ index: Int32, before: Link?) -> Bool {
        if pathInterfaces.contains(index) || evaluator.wasAvailable(index) { return true }
        let link = state.links[index]
        // With no path, why there is none (link-down, no-carrier, no-interface) is read
        // from every link that is no port: one coming, going, up or down may change it.
        if !pathIsUsable, (link ?? before)?.masterIndex == nil,
            link?.isUp != before?.isUp || link?.hasCarrier != before?.hasCarrier
        {
            return true
        }
        guard let link else { return false }
        if evaluator.isAvailable(link, state: state) { return true }
        if let master = link.masterIndex, pathInterfaces.contains(master) { return true }
        // Carrier back: the kernel uses a route it skipped while the link was down
        // (`ignore_routes_with_linkdown`) again, without a route message — if it has one.
        if link.masterIndex == nil, let before, !before.hasCarrier, link.hasCarrier, routedInterfaces.contains(index) { return true }
        return false
    }

    /// Keeps a router's captive-portal URI and NAT64 prefix, and forgets those of a link
    /// that went down or away. True when what is announced changed.
    private func announce(_ message: RtnetlinkMessage) -> Bool {
        switch message {
        case let .routerOption(option):
            guard let router = option.router else { return false }
            if let uri = option.captivePortalURI {
                return Self.keep(uri, from: router, in: &announcedPortals[option.interfaceIndex, default: [:]]) != uri
            }
            guard let (prefix, lifetime) = option.pref64 else { return false }
            guard lifetime > .zero else {
                return announcedNAT64[option.interfaceIndex]?.removeValue(forKey: router) != nil
            }
            let seconds = Int(lifetime.components.seconds)
            let before = Self.keep(
                (prefix, seconds, clock.now() + lifetime), from: router, in: &announcedNAT64[option.interfaceIndex, default: [:]])
            // A repeated advertisement only pushes the end back: the document says the lifetime, which stays.
            return before?.prefix != prefix || before?.lifetime != seconds
        case let .link(link) where !link.isUp:
            let portals = announcedPortals.removeValue(forKey: link.index) != nil
            return announcedNAT64.removeValue(forKey: link.index) != nil || portals
        case let .linkRemoved(index):
            let portals = announcedPortals.removeValue(forKey: index) != nil
            return announcedNAT64.removeValue(forKey: index) != nil || portals
        default:
            return false
        }
    }

    /// Keeps what `router` announced; returns what it had announced before. Advertisements
    /// from ever new sources (anyone on the link can send them) must not grow this without bound.
    private static func keep<Value>(_ value: Value, from router: IPAddress, in announced: inout [IPAddress: Value]) -> Value? {
        if announced[router] == nil, announced.count >= routersPerInterface { announced.remove(at: announced.startIndex) }
        return announced.updateValue(value, forKey: router)
    }

    /// The routers whose captive-portal URIs and NAT64 prefixes are kept per interface.
    static let routersPerInterface = 8

    /// The captive-portal URI a router announced on interface `index` (RFC 8910), while
    /// it stands: the router is still the kernel's next hop through that interface. Its
    /// lifetime is the router's own — the kernel removes the route when the router
    /// lifetime ends or a later advertisement says 0 — so one FIB-match lookup
    /// through the interface says whether it still holds.
    package func announcedCaptivePortal(on index: Int32) -> (uri: String, router: IPAddress)? {
        guard announcedPortals[index] != nil else { return nil }
        guard let router = standingRouter(on: index), let uri = announcedPortals[index]?[router] else {
            announcedPortals[index] = nil
            return nil
        }
        announcedPortals[index] = [router: uri]
        return (uri, router)
    }

    /// The kernel's next hop through interface `index` (a FIB-match lookup of the IPv6 probe):
    /// the router whose announcements stand there.
    private func standingRouter(on index: Int32) -> IPAddress? {
        guard case let .success(route) = query.lookupRoute(to: options.probeAddresses.v6, outputInterface: index, matchingFIBEntry: true)
        else {
            return nil
        }
        return route.gateway
    }

    /// The NAT64 prefix a router announced on interface `index` (RFC 8781), while it stands:
    /// within its lifetime, from the interface's next hop (as for portals). What ended is
    /// forgotten by `nextNAT64Expiry()`, after every evaluation.
    private func announcedNAT64(on index: Int32) -> (prefix: NAT64Prefix, lifetime: Int)? {
        guard announcedNAT64[index] != nil, let router = standingRouter(on: index),
            let entry = announcedNAT64[index]?[router], entry.expires > clock.now()
        else { return nil }
        return (entry.prefix, entry.lifetime)
    }

    /// When the next announced NAT64 prefix ends, unless announced again: the path is
    /// evaluated then, so that a prefix whose router went silent is not published for ever.
    /// Those that ended are forgotten, on every interface.
    package func nextNAT64Expiry() -> ContinuousClock.Instant? {
        guard !announcedNAT64.isEmpty else { return nil }
        let now = clock.now()
        announcedNAT64 = announcedNAT64.compactMapValues { announced in
            let standing = announced.filter { $0.value.expires > now }
            return standing.isEmpty ? nil : standing
        }
        return announcedNAT64.values.lazy.flatMap(\.values).map(\.expires).min()
    }

    /// The NAT64 on interface `index` for the document: the config's wins (the operator's
    /// word), then a router's, then the one RFC 7050 found there.
    private func nat64(on index: Int32?) -> (prefix: NAT64Prefix, published: Path.NAT64)? {
        if let configured = options.configuredNAT64 {
            return (configured, Path.NAT64(prefix: configured.description, source: .config))
        }
        guard let index, let link = state.links[index] else { return nil }
        if let (prefix, lifetime) = announcedNAT64(on: index) {
            return (prefix, Path.NAT64(prefix: prefix.description, source: .routerAdvertisement, interface: link.name, lifetime: lifetime))
        }
        if let discoveredNAT64, discoveredNAT64.interface == index {
            return (discoveredNAT64.prefix, Path.NAT64(prefix: discoveredNAT64.prefix.description, source: .dns64, interface: link.name))
        }
        return nil
    }

    /// Any prefix known before the path is: where a CLAT's packets are looked up to go.
    private var anyNAT64: NAT64Prefix? {
        options.configuredNAT64 ?? announcedNAT64.values.lazy.flatMap(\.values).first?.prefix ?? discoveredNAT64?.prefix
    }

    /// The path's own interface going down, losing carrier, vanishing or losing its last
    /// usable address of a family — or, while there is no path, a link becoming usable —
    /// is the news itself: the path is evaluated at once rather than after the burst that
    /// follows (taking a link down sends ~200 µs of IPv6 teardown messages after the link
    /// message; an IPv4 address, its routes' removals). `before` is the link as it was
    /// before the message was applied. Other links' flapping coalesces as any burst does.
    private func isUrgent(_ message: RtnetlinkMessage, before: Link?) -> Bool {
        switch message {
        case let .link(link):
            guard let before, before.isUp != link.isUp || before.hasCarrier != link.hasCarrier else { return false }
            return pathInterfaces.contains(link.index) || (!pathIsUsable && link.isUp && link.hasCarrier)
        case let .linkRemoved(index):
            return pathInterfaces.contains(index)
        case let .addressRemoved(removed):
            // Only the last one: a burst of removals costs one evaluation, not one each.
            return pathIsUsable && pathInterfaces.contains(removed.interfaceIndex) && removed.isUsableForGlobalTraffic
                && !state.hasAddressForGlobalTraffic(on: removed.interfaceIndex, family: removed.address.family)
        default:
            return false
        }
    }

    /// Whether a change (already applied) takes IPv4 routes through its interface away without
    /// a route message: the link went down, or lost an IPv4 address (the kernel flushes the
    /// routes that depended on it) — announced before the flush (`sawRoutesBeingFlushed`).
    private func takesIPv4Routes(_ message: RtnetlinkMessage, before: Link?) -> Bool {
        switch message {
        case let .link(link): before?.isUp == true && !link.isUp
        case let .addressRemoved(removed): removed.address.family == .v4
        default: false
        }
    }

    private func remember(_ path: Path, addresses: [IPAddress]) -> Path {
        var interfaces = evaluator.lookedUpInterfaces
        for index in [path.interface?.index, path.vpn?.index, path.clat?.index].compactMap({ $0 }) {
            interfaces.insert(Int32(index))
            // A VLAN's lower device carries it too.
            if let lower = state.links[Int32(index)]?.lowerIndex { interfaces.insert(lower) }
        }
        pathInterfaces = interfaces
        pathIsUsable = path.status.isReachable
        sawRoutesBeingFlushed = !flushing.isDisjoint(with: evaluator.lookedUpInterfaces)
        flushing = []
        watched = addresses + [options.probeAddresses.v4, options.probeAddresses.v6]
        return path
    }

    /// Brings the evaluator's view of the interfaces up to date before a lookup.
    private func refresh() {
        guard !touched.isEmpty else { return }
        evaluator.refresh(touched, state: state)
        touched = []
    }

    /// The path to the probes of `options`: what the engine watches.
    /// `allowed`: the interface types the path may leave by (a restricted monitor's).
    package func evaluateDefaultPath(allowed: Set<InterfaceType> = Set(InterfaceType.allCases), watch: Bool = true) -> Path {
        guard isSynchronized else { return .unknown() }
        statistics.evaluations += 1
        refresh()
        let probes = [options.probeAddresses.v4, options.probeAddresses.v6]
        evaluator.nat64 = anyNAT64
        var path = evaluator.evaluate(probes, state: state, query: query, allowed: allowed)
        path.nat64 = nat64(on: path.interface.map { Int32($0.index) })?.published
        if let dnsServers { path.dns = evaluator.dns(dnsServers, state: state, query: query, allowed: allowed) }
        return watch ? remember(path, addresses: probes) : path
    }

    /// The path to one destination's addresses (already resolved). With `watch`, the
    /// destination is what the engine watches (a monitor of one host); without, a
    /// one-off answer (the daemon's `Route()`) that leaves the watched path as it is.
    package func evaluate(
        destination: String, addresses: [IPAddress], watch: Bool = true,
        allowed: Set<InterfaceType> = Set(InterfaceType.allCases)
    ) -> Path {
        guard isSynchronized else { return .unknown(destination: destination) }
        refresh()
        // An IPv4 literal with no IPv4 route is reached through the NAT64 of the interface that carries
        // IPv6 (one lookup, made only where a NAT64 is known at all).
        var nat64: (prefix: NAT64Prefix, published: Path.NAT64)?
        if let any = anyNAT64 {
            let carrier = evaluator.outcome(for: options.probeAddresses.v6, state: state, query: query, allowed: allowed).result.usable?
                .carrier
            nat64 = self.nat64(on: carrier?.index)
            evaluator.nat64 = nat64?.prefix ?? any
        } else {
            evaluator.nat64 = nil
        }
        var path = evaluator.evaluate(
            addresses, state: state, query: query, destination: destination, allowed: allowed,
            throughNAT64: nat64 != nil)
        path.nat64 = nat64?.published
        return watch ? remember(path, addresses: addresses) : path
    }

    /// Every way out (docs/connectivity.md, "Every way out"): each available interface that
    /// is no tunnel but `excluded` (the path's own) as a path of its own to the probes, for
    /// the daemon to judge one by one.
    package func waysOut(excluding excluded: Int?) -> [Path] {
        guard isSynchronized else { return [] }
        refresh()
        return evaluator.waysOut(
            to: [options.probeAddresses.v4, options.probeAddresses.v6], excluding: excluded, state: state, query: query)
    }

    // MARK: Interfaces

    /// Whether interface changes are kept for `takeInterfaceChanges()`: on while
    /// anyone subscribes to them, so nobody's monitor pays for them otherwise.
    package var tracksInterfaces = false {
        didSet { if !tracksInterfaces { pendingInterfaces = [:] } }
    }

    /// Every interface, in index order: the inventory (`Interfaces()`).
    package func inventory() -> [InterfaceChange] {
        refresh()
        return state.links.values.sorted { $0.index < $1.index }.map { evaluator.change(of: $0, state: state) }
    }

    /// The interfaces changed since the last call, each once, as they are now (a
    /// removed one as it was last seen), in index order.
    package func takeInterfaceChanges() -> [InterfaceChange] {
        refresh()
        defer { pendingInterfaces = [:] }
        return pendingInterfaces.sorted { $0.key < $1.key }.map { index, last in
            if let link = state.links[index] { evaluator.change(of: link, state: state) } else { evaluator.removal(of: last) }
        }
    }
}
