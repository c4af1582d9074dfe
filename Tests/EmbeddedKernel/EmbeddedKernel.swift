import IPAddresses
import Netlink
import ReachabilityCore
import Synchronization
import SystemCalls

/// A network namespace without a kernel: the links, addresses and routes a test
/// sets up, the events each change sends to every subscription (`subscribe()`) — as
/// datagrams in the kernel's format, read by the same parsers as the socket's — and
/// the FIB's answers to lookups.
/// What the monitor decides from them (`PathEngine`, `PathWatcher`) runs unchanged,
/// as any user, in microseconds.
///
/// It behaves as this project's kernels were seen to (docs/development.md, "Kernel
/// behaviour the monitor survives") where a decision depends on it: taking a link
/// down, or its last IPv4 address away, removes its IPv4 routes without a message;
/// an IPv4 removal can be announced before lookups stop finding what it takes away
/// (`deleteRoute(_:unlinkedAfter:)`, `routesUnlinkedAfter:`); an overrun is reported
/// once and the queue is emptied. Its FIB is the main table
/// only — longest prefix, then lowest metric; policy rules, ECMP and the kernel's
/// own corner cases are what the namespace tests are for.
package final class EmbeddedKernel: KernelQueries, KernelSource, Sendable {
    /// A route in the FIB.
    package struct Route: Hashable, Sendable {
        package var destination: IPAddress
        package var prefixLength: UInt8
        package var outputInterface: Int32
        package var gateway: IPAddress?
        package var metric: UInt32
        /// `RouteType`: unicast, or unreachable, blackhole, prohibit.
        package var type: UInt8

        package init(
            _ destination: IPAddress, prefixLength: UInt8, outputInterface: Int32, gateway: IPAddress? = nil,
            metric: UInt32 = 0, type: UInt8 = RouteType.unicast
        ) {
            self.destination = destination
            self.prefixLength = prefixLength
            self.outputInterface = outputInterface
            self.gateway = gateway
            self.metric = metric
            self.type = type
        }

        /// The default route of `gateway`'s family through `interface`.
        package static func defaultRoute(via gateway: IPAddress, interface: Int32, metric: UInt32 = 0) -> Route {
            Route(
                gateway.family == .v4 ? IPAddress("0.0.0.0")! : IPAddress("::")!, prefixLength: 0,
                outputInterface: interface, gateway: gateway, metric: metric)
        }

        /// An `unreachable`, `blackhole` or `prohibit` route: it goes through no interface.
        package static func refusing(_ destination: IPAddress, prefixLength: UInt8, type: UInt8) -> Route {
            Route(destination, prefixLength: prefixLength, outputInterface: 0, type: type)
        }

        /// Whether packets leave by its interface (unicast, local), rather than being refused.
        var isUnicast: Bool { type == RouteType.unicast || type == RouteType.local }

        var change: RouteChange {
            RouteChange(
                family: destination.family, table: 254, destination: prefixLength == 0 ? nil : destination,
                destinationPrefixLength: prefixLength, type: type, removed: false,
                outputInterfaces: outputInterface > 0 ? [outputInterface] : [])
        }

        func covers(_ address: IPAddress) -> Bool { change.covers(address) }
    }

    package let clock: VirtualClock
    private let state = Mutex(State())

    /// Everything the kernel holds, behind one lock: a test changes it on its thread while a
    /// monitor's thread reads events and asks questions.
    private struct State {
        var links: [Int32: Link] = [:]
        var addresses: [InterfaceAddress.Key: InterfaceAddress] = [:]
        /// Each route, and when a removal announced already takes effect (nil: it stands).
        var routes: [Route: ContinuousClock.Instant?] = [:]
        /// Every subscription still held, as the kernel multicasts to every socket that joined.
        var subscriptions: [Weak] = []
        var failingDumps = 0
        /// The destination of each lookup answered, in order.
        var asked: [IPAddress] = []
        var dumps = 0

        var listeners: [EmbeddedKernelSubscription] { subscriptions.compactMap(\.subscription) }

        /// Takes a link's IPv4 routes away without a message, as the kernel flushes them
        /// (`fib_disable_ip`): at once, or found by lookups until `unlinked`.
        @discardableResult
        mutating func flushIPv4Routes(through index: Int32, unlinked: ContinuousClock.Instant?) -> [Route] {
            let flushed = routes.keys.filter { $0.outputInterface == index && $0.destination.family == .v4 }
            for route in flushed { routes[route] = unlinked.map { .some($0) } }
            return flushed
        }

        /// Takes `route` away: at once, or found by lookups for `delay` more.
        mutating func unlink(_ route: Route, after delay: Duration, now: ContinuousClock.Instant) {
            precondition(routes[route] != nil, "no such route")
            routes[route] = delay > .zero ? .some(now + delay) : nil
        }
    }

    private struct Weak {
        weak var subscription: EmbeddedKernelSubscription?
    }

    /// Dumps that fail from now on (`ENOBUFS`, as a dump racing a burst can), each counted down.
    package var failingDumps: Int {
        get { state.withLock { $0.failingDumps } }
        set { state.withLock { $0.failingDumps = newValue } }
    }

    /// Route lookups answered: what evaluations cost.
    package var lookups: Int { state.withLock { $0.asked.count } }
    /// The destination of each lookup answered, in order.
    package var asked: [IPAddress] { state.withLock { $0.asked } }
    /// Dumps answered (links and addresses count as one).
    package var dumps: Int { state.withLock { $0.dumps } }

    package init(clock: VirtualClock = VirtualClock()) {
        self.clock = clock
    }

    /// A socket that joined every group the monitor reads: it receives what is sent from now on.
    package func subscribe() throws -> EmbeddedKernelSubscription {
        let subscription = try EmbeddedKernelSubscription()
        state.withLock { state in
            state.subscriptions.removeAll { $0.subscription == nil }
            state.subscriptions.append(Weak(subscription: subscription))
        }
        return subscription
    }

    /// For `MonitorOptions.kernel`: every engine those options open watches this kernel.
    package func open() throws -> (events: any KernelEvents, queries: any KernelQueries) {
        (try subscribe(), self)
    }

    /// Options that watch this kernel.
    package func options() -> MonitorOptions {
        var options = MonitorOptions()
        options.kernel = self
        return options
    }

    /// Subscriptions still held by someone: a socket a stopped monitor let go of is not one.
    package var subscribers: Int { state.withLock { $0.listeners.count } }

    /// Datagrams sent but not read yet, over every subscription.
    package var unread: Int { state.withLock { $0.listeners }.reduce(0) { $0 + $1.queued } }

    // MARK: Changes, each announced as the kernel announces it

    /// Adds a link, or changes one (`ip link add`, `ip link set`). Taking it down takes its
    /// IPv4 routes away unannounced, `routesUnlinkedAfter` the link's message.
    package func setLink(_ link: Link, routesUnlinkedAfter delay: Duration = .zero) {
        let unlinked = delay > .zero ? clock.now + delay : nil
        state.withLock { state in
            let before = state.links[link.index]
            state.links[link.index] = link
            if before?.isUp == true, !link.isUp { state.flushIPv4Routes(through: link.index, unlinked: unlinked) }
        }
        send([.link(link)])
    }

    /// Changes a link's state: administratively up or down, with or without carrier.
    package func setLink(_ index: Int32, up: Bool? = nil, carrier: Bool? = nil, routesUnlinkedAfter delay: Duration = .zero) {
        guard var link = state.withLock({ $0.links[index] }) else { preconditionFailure("no link \(index)") }
        if let up { link.flags = up ? link.flags.union(.up) : link.flags.subtracting([.up, .running, .lowerUp]) }
        if let carrier {
            link.flags = carrier ? link.flags.union([.running, .lowerUp]) : link.flags.subtracting([.running, .lowerUp])
        }
        link.operationalState = !link.isUp ? .down : link.flags.contains(.lowerUp) ? .up : .lowerLayerDown
        setLink(link, routesUnlinkedAfter: delay)
    }

    /// Deletes a link (`ip link del`): its addresses and routes go with it, unannounced.
    package func removeLink(_ index: Int32) {
        state.withLock { state in
            state.links[index] = nil
            state.addresses = state.addresses.filter { $0.key.interfaceIndex != index }
            state.routes = state.routes.filter { $0.key.outputInterface != index }
        }
        send([.linkRemoved(index: index)])
    }

    package func addAddress(_ address: InterfaceAddress) {
        state.withLock { $0.addresses[address.key] = address }
        send([.address(address)])
    }

    /// Removes an address (`ip address del`). A link's last IPv4 address takes the link's IPv4
    /// routes away, `routesUnlinkedAfter` the address's message: its prefix route's removal is
    /// announced next, the others' (a default route through it) never.
    package func removeAddress(_ address: InterfaceAddress, routesUnlinkedAfter delay: Duration = .zero) {
        let unlinked = delay > .zero ? clock.now + delay : nil
        let prefixRoutes = state.withLock { state -> [Route] in
            state.addresses[address.key] = nil
            let index = address.interfaceIndex
            guard address.address.family == .v4,
                !state.addresses.values.contains(where: { $0.interfaceIndex == index && $0.address.family == .v4 })
            else { return [] }
            return state.flushIPv4Routes(through: index, unlinked: unlinked).filter {
                $0.gateway == nil && $0.prefixLength == address.prefixLength && $0.covers(address.address)
            }
        }
        send([.addressRemoved(address)])
        for route in prefixRoutes {
            var change = route.change
            change.removed = true
            send([.route(change)])
        }
    }

    package func addRoute(_ route: Route) {
        state.withLock { $0.routes[route] = .some(nil) }
        send([.route(route.change)])
    }

    /// Deletes a route. The removal is announced at once; lookups stop finding the route
    /// only `unlinkedAfter` later — IPv4 announces before it unlinks.
    package func deleteRoute(_ route: Route, unlinkedAfter delay: Duration = .zero) {
        state.withLock { $0.unlink(route, after: delay, now: clock.now) }
        var change = route.change
        change.removed = true
        send([.route(change)])
    }

    /// Whether the FIB holds `route` (a link's going down takes its IPv4 routes away).
    package func hasRoute(_ route: Route) -> Bool { state.withLock { $0.routes[route] != nil } }

    /// A policy rule added or removed.
    package func changeRule() { send([.rule]) }

    /// Deletes the next-hop object `routes` use (`ip nexthop del`): its removal is announced,
    /// the routes go `unlinkedAfter` later with no message of their own.
    package func removeNextHop(usedBy routes: [Route], unlinkedAfter delay: Duration = .zero) {
        state.withLock { state in
            for route in routes { state.unlink(route, after: delay, now: clock.now) }
        }
        send([.nextHop])
    }

    /// Sends a datagram of several messages at once (a burst the monitor reads in one go).
    package func send(_ messages: [RtnetlinkMessage]) {
        deliver(RtnetlinkEncoder.datagram(messages))
    }

    /// Sends bytes as they are: a datagram a real kernel sent, recorded.
    package func deliver(_ datagram: [UInt8]) {
        for listener in state.withLock({ $0.listeners }) { listener.queue(.datagram(datagram)) }
    }

    /// Every listener's buffer overflowed: what is queued is lost, and the next read says `ENOBUFS`.
    package func overrun() {
        for listener in state.withLock({ $0.listeners }) { listener.queue(.overrun) }
    }

    // MARK: KernelQueries

    package func links() throws -> [Link] {
        try state.withLock { state in
            if state.failingDumps > 0 {
                state.failingDumps -= 1
                throw NetlinkError.system(operation: "dumping links", errno: 105) // ENOBUFS
            }
            state.dumps += 1
            return state.links.values.sorted { $0.index < $1.index }
        }
    }

    package func addresses() throws -> [InterfaceAddress] {
        state.withLock {
            $0.addresses.values.sorted { ($0.interfaceIndex, $0.address.description) < ($1.interfaceIndex, $1.address.description) }
        }
    }

    /// The FIB's answer, as `ip route get [fibmatch] ADDRESS [oif IF]` gives it.
    package func lookupRoute(
        to destination: IPAddress, outputInterface: Int32?, matchingFIBEntry: Bool
    ) -> Result<RouteLookup, RouteLookupFailure> {
        let now = clock.now
        return state.withLock { state in
            state.asked.append(destination)
            let links = state.links
            let candidates = state.routes.filter { route, unlinked in
                // One being taken away is found until it is gone, whatever its link says by then.
                let standing = unlinked.map { $0 > now } ?? (!route.isUnicast || links[route.outputInterface]?.isUp == true)
                return standing && route.covers(destination) && (outputInterface == nil || route.outputInterface == outputInterface)
            }.keys
            guard let best = candidates.min(by: { ($1.prefixLength, $0.metric) < ($0.prefixLength, $1.metric) }) else {
                // A plain lookup through an interface invents an on-link route; a FIB match does not.
                if let outputInterface, !matchingFIBEntry, links[outputInterface]?.isUp == true {
                    return .success(Self.answer(destination, through: outputInterface, route: nil, matchingFIBEntry: false))
                }
                return .failure(outputInterface != nil && matchingFIBEntry ? .unreachable : .noRoute)
            }
            switch best.type {
            case RouteType.unreachable: return .failure(.unreachable)
            case RouteType.blackhole: return .failure(.blackhole)
            case RouteType.prohibit: return .failure(.prohibited)
            default:
                return .success(Self.answer(destination, through: best.outputInterface, route: best, matchingFIBEntry: matchingFIBEntry))
            }
        }
    }

    private static func answer(_ destination: IPAddress, through interface: Int32, route: Route?, matchingFIBEntry: Bool) -> RouteLookup {
        RouteLookup(
            destination: destination, outputInterface: interface, gateway: route?.gateway, preferredSource: nil,
            type: route?.type ?? RouteType.unicast, table: route?.type == RouteType.local ? 255 : 254,
            destinationPrefixLength: matchingFIBEntry ? route?.prefixLength ?? 0 : UInt8(destination.family.bitCount),
            priority: matchingFIBEntry ? route?.metric : nil)
    }
}

/// One socket's queue of what an `EmbeddedKernel` sent; pollable, as the real one is.
package final class EmbeddedKernelSubscription: KernelEvents, Sendable {
    fileprivate enum Delivery {
        case datagram([UInt8])
        case overrun
    }

    private let pending = Mutex<[Delivery]>([])
    private let wake: WakePipe

    fileprivate init() throws {
        wake = try WakePipe()
    }

    /// Datagrams (or an overrun) not read yet.
    package var queued: Int { pending.withLock { $0.count } }

    fileprivate func queue(_ delivery: Delivery) {
        pending.withLock { pending in
            if case .overrun = delivery { pending = [.overrun] } else { pending.append(delivery) }
        }
        wake.signal()
    }

    package var fileDescriptor: Int32 { wake.readEnd.rawValue }
    package var receiveBufferSize: Int { 4 << 20 }

    package func drain(limit: Int, _ handle: (RtnetlinkMessage) -> Bool) throws -> KernelEventsDrain {
        var count = 0
        var urgent = false
        while count < limit, !urgent {
            // The wake pipe is emptied before the queue is looked at: a datagram queued meanwhile signals again.
            let next = pending.withLock { pending -> Delivery? in
                if pending.isEmpty { wake.drain() }
                return pending.isEmpty ? nil : pending.removeFirst()
            }
            switch next {
            case nil:
                return .drained(messages: count)
            case .overrun:
                // As the socket is read empty after ENOBUFS: nothing queued, nothing to wake for.
                pending.withLock { pending in
                    pending = []
                    wake.drain()
                }
                return .overrun
            case let .datagram(bytes):
                for message in RtnetlinkDatagram.decode(bytes).messages {
                    count += 1
                    if handle(message) { urgent = true }
                }
            }
        }
        return .paused(messages: count)
    }
}

extension EmbeddedKernel {
    /// The uplink `addUplink()` makes by default: `eth0`, index 2, on 192.0.2.0/24.
    package static let uplink: Int32 = 2
    /// Its default routes: via 192.0.2.1, and (with `ipv6`) via fe80::1, metric 1024.
    package static let uplinkRoute4 = Route.defaultRoute(via: IPAddress("192.0.2.1")!, interface: uplink)
    package static let uplinkRoute6 = Route.defaultRoute(via: IPAddress("fe80::1")!, interface: uplink, metric: 1024)

    /// `lo`, up, with its addresses and local routes, as in every namespace.
    package func addLoopback() {
        setLink(
            Link(
                index: 1, name: "lo", hardwareType: HardwareType.loopback, flags: [.up, .running, .loopback, .lowerUp],
                operationalState: .unknown, mtu: 65536))
        addAddress(InterfaceAddress(interfaceIndex: 1, address: IPAddress("127.0.0.1")!, prefixLength: 8, scope: AddressScope.host))
        addAddress(InterfaceAddress(interfaceIndex: 1, address: IPAddress("::1")!, prefixLength: 128, scope: AddressScope.host))
        addRoute(Route(IPAddress("127.0.0.0")!, prefixLength: 8, outputInterface: 1, type: RouteType.local))
        addRoute(Route(IPAddress("::1")!, prefixLength: 128, outputInterface: 1, type: RouteType.local))
    }

    /// An Ethernet uplink (a veth, as the namespace tests' are): `name`, `index`, SUBNET.2/24 and
    /// its prefix route, fe80::/64 (as every link with IPv6 has), and with `defaultRoute` a default
    /// route via SUBNET.1 at `metric`. With `ipv6`, 2001:db8::2/64 and a default route via fe80::1
    /// (metric 1024) too.
    package func addUplink(
        _ name: String = "eth0", index: Int32 = uplink, subnet: String = "192.0.2", metric: UInt32 = 0,
        defaultRoute: Bool = true, ipv6: Bool = false
    ) {
        setLink(Link(index: index, name: name, kind: "veth"))
        addAddress(InterfaceAddress(interfaceIndex: index, address: IPAddress("\(subnet).2")!, prefixLength: 24))
        addRoute(Route(IPAddress("\(subnet).0")!, prefixLength: 24, outputInterface: index))
        addRoute(Route(IPAddress("fe80::")!, prefixLength: 64, outputInterface: index, metric: 256))
        if defaultRoute { addRoute(.defaultRoute(via: IPAddress("\(subnet).1")!, interface: index, metric: metric)) }
        guard ipv6 else { return }
        addAddress(InterfaceAddress(interfaceIndex: index, address: IPAddress("2001:db8::2")!, prefixLength: 64))
        addRoute(Route(IPAddress("2001:db8::")!, prefixLength: 64, outputInterface: index, metric: 256))
        addRoute(.defaultRoute(via: IPAddress("fe80::1")!, interface: index, metric: 1024))
    }
}
