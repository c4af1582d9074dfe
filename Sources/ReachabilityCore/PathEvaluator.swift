import FoundationEssentials
import IPAddresses
import Netlink
import SystemCalls

/// Turns the kernel's answers into a `Path`. It keeps no routes: each
/// evaluation asks the FIB (`RTM_GETROUTE`) for the probe addresses — through the
/// engine's `RouteLookupMemo`, which asks again only what a message may have moved —
/// and reads only links and addresses from the `NetworkState`.
struct PathEvaluator {
    let options: MonitorOptions
    let classifier: InterfaceClassifier
    /// Kinds already decided, by interface index and name (sysfs is read once per device).
    private var kinds: [Int32: (name: String, kind: InterfaceKind)] = [:]
    /// The interfaces that could carry a path of their own (docs/path.md, "Available
    /// interfaces"): the document's `interfaces`, and the only candidates when a route
    /// must be found around an ignored interface or under a tunnel. Kept up to date
    /// one touched interface at a time, so a pod's veth costs nothing here.
    private var available: [Int32: Path.InterfaceState] = [:]
    /// `available` in index order, until it changes.
    private var availableInOrder: [Path.InterfaceState]?
    /// The interfaces the kernel's answers named in the latest evaluation, usable or not
    /// (read by the engine right after a watched one).
    private(set) var lookedUpInterfaces: Set<Int32> = []
    /// The network's NAT64 prefix on the path, as the engine knows it: where a CLAT's
    /// translated packets go, and how an IPv4 destination with no IPv4 route is reached.
    var nat64: NAT64Prefix?
    /// The probes' and resolvers' addresses as text, written once: every evaluation of the
    /// default path describes the same ones, and formatting them again was most of the code
    /// an unreachable path runs to describe its routes (BENCHMARKS.md §32). A watched host's
    /// addresses are not kept: thousands of watches would only churn it.
    private var addressTexts: [(address: IPAddress, text: String)]

    init(options: MonitorOptions, facts: any InterfaceFactsSource) {
        self.options = options
        classifier = InterfaceClassifier(overrides: options.kindOverrides, facts: facts)
        addressTexts = [options.probeAddresses.v4, options.probeAddresses.v6].map { ($0, $0.description) }
    }

    /// The outcome for one probed address.
    struct Outcome {
        var destination: IPAddress
        var result: Verdict
        /// What the kernel said, for the document's `routes`.
        var lookup: RouteLookup?
        var lookupFailed: NetlinkError?
        /// For an IPv4 destination reached through the NAT64: the IPv6 address the kernel was asked about.
        var synthesized: IPAddress?
    }

    enum Verdict {
        case usable(Usable)
        case unusable(UnreachableReason)

        var usable: Usable? { if case let .usable(value) = self { value } else { nil } }
    }

    /// A usable path for one address.
    struct Usable {
        var medium: Medium
        /// The interface that carries the traffic (under a VPN, the underlay, if one is found).
        var carrier: Link
        var gateway: IPAddress?
        var vpn: Link?
        /// The CLAT that translates this IPv4 into IPv6 (464XLAT): not a VPN.
        var clat: Link?
    }

    mutating func kind(of link: Link) -> InterfaceKind {
        if let known = kinds[link.index], known.name == link.name { return known.kind }
        let kind = classifier.kind(of: link)
        kinds[link.index] = (link.name, kind)
        return kind
    }

    // MARK: Available interfaces

    /// Whether `link` could carry a path of its own: up, with carrier, not a port of a
    /// bridge or bond (its master carries the traffic), not loopback, not ignored, and
    /// holding an address that can reach beyond the link.
    func isAvailable(_ link: Link, state: NetworkState) -> Bool {
        link.isUp && link.hasCarrier && link.masterIndex == nil && !link.flags.contains(.loopback)
            && state.hasAddressForGlobalTraffic(on: link.index) && !options.isIgnored(link.name)
    }

    /// Whether `index` is in the available set as last brought up to date.
    func wasAvailable(_ index: Int32) -> Bool { available[index] != nil }

    /// Brings the available set up to date for the interfaces events touched; forgets
    /// the kinds of interfaces that are gone.
    mutating func refresh(_ touched: some Sequence<Int32>, state: NetworkState) {
        for index in touched {
            guard let link = state.links[index] else {
                kinds[index] = nil
                if available.removeValue(forKey: index) != nil { availableInOrder = nil }
                continue
            }
            let entry = isAvailable(link, state: state) ? interfaceState(link, state: state) : nil
            if available[index] != entry {
                available[index] = entry
                availableInOrder = nil
            }
        }
    }

    /// Rebuilds the available set from a fresh dump.
    mutating func rebuild(_ state: NetworkState) {
        kinds = kinds.filter { state.links[$0.key]?.name == $0.value.name }
        available = [:]
        availableInOrder = nil
        refresh(state.links.keys, state: state)
    }

    /// The document's `interfaces`.
    mutating func availableInterfaces() -> [Path.InterfaceState] {
        if let availableInOrder { return availableInOrder }
        let list = available.values.sorted { $0.index < $1.index }
        availableInOrder = list
        return list
    }

    /// One interface as `Interfaces()` and `InterfaceChanged` describe it (docs/api.md).
    mutating func change(of link: Link, state: NetworkState) -> InterfaceChange {
        InterfaceChange(
            interface: interfaceState(link, state: state),
            master: link.masterIndex.map { state.links[$0]?.name ?? String($0) },
            available: isAvailable(link, state: state))
    }

    /// A removed interface's entry, from the link as it was last seen.
    mutating func removal(of link: Link) -> InterfaceChange {
        let entry = Path.InterfaceState(
            name: link.name, index: Int(link.index), kind: kind(of: link),
            operstate: link.operationalState.description, up: link.isUp, carrier: link.hasCarrier,
            addresses: [])
        kinds[link.index] = nil
        return InterfaceChange(interface: entry, available: false, removed: true)
    }

    private mutating func interfaceState(_ link: Link, state: NetworkState) -> Path.InterfaceState {
        Path.InterfaceState(
            name: link.name, index: Int(link.index), kind: kind(of: link),
            operstate: link.operationalState.description, up: link.isUp, carrier: link.hasCarrier,
            addresses: state.addresses(of: link.index).filter(\.hasSettled).map(\.cidr))
    }

    // MARK: The path

    /// The path to `addresses` (the probes, or a host's resolved addresses), leaving
    /// only by an interface of an `allowed` type (docs/path.md, "Restricting the path").
    /// With `throughNAT64`, an IPv4 address without a usable route is looked up again as the
    /// NAT64's synthesised IPv6 address (docs/path.md, "IPv6-only networks: NAT64 and CLAT").
    mutating func evaluate(
        _ addresses: [IPAddress], state: NetworkState, query: any KernelQueries,
        destination: String? = nil, allowed: Set<InterfaceType> = Set(InterfaceType.allCases),
        throughNAT64: Bool = false
    ) -> Path {
        lookedUpInterfaces = []
        var outcomes = addresses.map { outcome(for: $0, state: state, query: query, allowed: allowed) }
        if throughNAT64, let nat64 {
            for (position, direct) in outcomes.enumerated()
            where direct.destination.family == .v4 && direct.lookupFailed == nil && direct.result.usable == nil {
                guard let synthesized = nat64.synthesize(direct.destination) else { continue }
                var translated = outcome(for: synthesized, state: state, query: query, allowed: allowed)
                guard translated.result.usable != nil else { continue }
                translated.destination = direct.destination
                translated.synthesized = synthesized
                outcomes[position] = translated
            }
        }
        for outcome in outcomes { if let lookup = outcome.lookup { lookedUpInterfaces.insert(lookup.outputInterface) } }
        var path = Path(status: .unknown, destination: destination)
        path.interfaces = availableInterfaces()
        path.routes = outcomes.map { describe($0, state: state) }
        if outcomes.contains(where: { $0.lookupFailed != nil }) {
            return path // The kernel could not be asked: say so rather than guess.
        }
        path.ipv4 = outcomes.contains { $0.destination.family == .v4 && $0.synthesized == nil && $0.result.usable != nil }
        path.ipv6 = outcomes.contains { $0.destination.family == .v6 && $0.result.usable != nil }
        if let usable = outcomes.lazy.compactMap(\.result.usable).first {
            path.status = usable.medium.status
            path.interface = describe(usable.carrier)
            path.gateway = usable.gateway.map { format($0, on: usable.carrier) }
            path.vpn = usable.vpn.map { describe($0) }
            path.clat = usable.clat.map { describe($0) }
            path.expensive =
                usable.medium == .cellular || options.isMetered(usable.carrier.name)
                || usable.vpn.map { options.isMetered($0.name) } == true
            return path
        }
        path.status = .unreachable
        let reasons = outcomes.compactMap { outcome -> UnreachableReason? in
            if case let .unusable(reason) = outcome.result { return reason } else { return nil }
        }
        path.reason = explain(reasons.min { $0.rank < $1.rank } ?? .noRoute, state)
        return path
    }

    // MARK: Every way out

    /// Each available interface that is no tunnel (nor `excluded`), as a path of its own to `probes`: the
    /// families it has a real route for (a FIB-match lookup restricted to it, as an app
    /// bound to it would leave) and its next hop. One with no route is `unreachable`.
    mutating func waysOut(to probes: [IPAddress], excluding excluded: Int?, state: NetworkState, query: any KernelQueries) -> [Path] {
        availableInterfaces().compactMap { entry -> Path? in
            guard !entry.kind.isTunnel, entry.index != excluded, let link = state.links[Int32(entry.index)] else { return nil }
            let routes = probes.map { probe -> RouteLookup? in
                guard problem(with: link, family: probe.family, state: state) == nil,
                    case let .success(match) = query.lookupRoute(to: probe, outputInterface: link.index, matchingFIBEntry: true),
                    match.type == RouteType.unicast
                else { return nil }
                return match
            }
            let routed = routes.compactMap { $0 }
            return Path(
                status: routed.isEmpty ? .unreachable : medium(of: link, state: state).status,
                reason: routed.isEmpty ? .noRoute : nil, interface: describe(link),
                gateway: routed.lazy.compactMap(\.gateway).first.map { format($0, on: link) },
                ipv4: zip(probes, routes).contains { $0.family == .v4 && $1 != nil },
                ipv6: zip(probes, routes).contains { $0.family == .v6 && $1 != nil })
        }
    }

    // MARK: DNS

    /// The configured resolvers, and those the path can reach (docs/path.md, "DNS").
    /// A restricted path (`allowed`) reaches only the servers behind interfaces of the allowed types.
    mutating func dns(
        _ configured: DNSServers, state: NetworkState, query: any KernelQueries,
        allowed: Set<InterfaceType> = Set(InterfaceType.allCases)
    ) -> Path.DNS {
        var servers: [String] = []
        var usable: [String] = []
        for server in configured.servers {
            let link: Link? =
                switch server.link {
                case let .index(index)?: state.links[index]
                case let .name(name)?: state.links.values.first { $0.name == name }
                case nil: nil
                }
            let text: String =
                switch server.link {
                case nil: resolverText(of: server.address)
                case let .index(index)?: "\(server.address)%\(link?.name ?? String(index))"
                case let .name(name)?: "\(server.address)%\(name)"
                }
            servers.append(text)
            if isUsable(server, link: link, state: state, query: query, allowed: allowed) { usable.append(text) }
        }
        return Path.DNS(source: configured.source, servers: servers, usable: usable)
    }

    /// A resolver on this host always answers (whether its upstream does is its
    /// business); a per-link one needs its link and a route through it; any other
    /// one a usable route, judged as the path's own.
    private mutating func isUsable(
        _ server: DNSServers.Server, link: Link?, state: NetworkState, query: any KernelQueries,
        allowed: Set<InterfaceType>
    ) -> Bool {
        if server.address.isLoopback { return true }
        guard server.link != nil else {
            return outcome(for: server.address, state: state, query: query, allowed: allowed).result.usable != nil
        }
        guard let link, link.isUp, link.hasCarrier, !options.isIgnored(link.name),
            allowed.contains(medium(of: link, state: state).interfaceType),
            case let .success(match) = query.lookupRoute(to: server.address, outputInterface: link.index, matchingFIBEntry: true)
        else {
            return false
        }
        return match.type == RouteType.unicast
    }

    // MARK: One address

    mutating func outcome(
        for destination: IPAddress, state: NetworkState, query: any KernelQueries,
        allowed: Set<InterfaceType> = Set(InterfaceType.allCases)
    ) -> Outcome {
        switch query.lookupRoute(to: destination) {
        case let .failure(.failed(error)):
            return Outcome(destination: destination, result: .unusable(.noRoute), lookupFailed: error)
        case .failure(.blackhole):
            return Outcome(destination: destination, result: .unusable(.blackhole))
        case .failure:
            return Outcome(destination: destination, result: .unusable(.noRoute))
        case var .success(lookup):
            if let link = state.links[lookup.outputInterface], options.isIgnored(link.name) {
                // The kernel picked an interface the user never wants as the path:
                // the best route through one that is not ignored is the path.
                guard let alternative = bestRoute(to: destination, state: state, query: query, excludingTunnels: false) else {
                    return Outcome(destination: destination, result: .unusable(.noRoute), lookup: lookup)
                }
                lookup = alternative
            }
            let verdict = usability(of: lookup, state: state, query: query)
            guard let usable = verdict.usable, !allowed.contains(usable.medium.interfaceType) else {
                return Outcome(destination: destination, result: verdict, lookup: lookup)
            }
            // The kernel's way out is of a type the monitor may not use: the path is the
            // best route through an interface of an allowed type, as an app bound to it
            // (SO_BINDTODEVICE) would leave — not through a tunnel riding on another.
            guard let restricted = bestRoute(to: destination, state: state, query: query, excludingTunnels: true, allowed: allowed) else {
                let any = availableInterfaces().contains { entry in
                    state.links[Int32(entry.index)].map {
                        !entry.kind.isTunnel && allowed.contains(medium(of: $0, state: state).interfaceType)
                    } ?? false
                }
                return Outcome(destination: destination, result: .unusable(any ? .noRoute : .noInterface), lookup: nil)
            }
            return Outcome(destination: destination, result: usability(of: restricted, state: state, query: query), lookup: restricted)
        }
    }

    /// Whether the interface the kernel picked can carry the packet.
    mutating func usability(of lookup: RouteLookup, state: NetworkState, query: any KernelQueries) -> Verdict {
        guard let link = state.links[lookup.outputInterface] else { return .unusable(.noInterface) }
        if let problem = problem(with: link, family: lookup.destination.family, state: state) { return .unusable(problem) }
        let kind = kind(of: link)
        if kind == .tunnel, lookup.destination.family == .v4, isCLAT(link, state: state) {
            return translated(lookup.destination, by: link, state: state, query: query)
        }
        if kind.isTunnel {
            // A VPN: the medium is that of the path the tunnel rides on.
            guard let underlay = bestRoute(to: lookup.destination, state: state, query: query, excludingTunnels: true),
                let carrier = state.links[underlay.outputInterface],
                problem(with: carrier, family: lookup.destination.family, state: state) == nil
            else {
                // No visible underlay (a userspace stack, or the VPN's own namespace): the tunnel is the medium.
                return .usable(Usable(medium: .wired, carrier: link, gateway: lookup.gateway, vpn: link))
            }
            // A VPN whose IPv4 rides on a CLAT rides on the CLAT's IPv6 uplink.
            if lookup.destination.family == .v4, isCLAT(carrier, state: state),
                case var .usable(through) = translated(lookup.destination, by: carrier, state: state, query: query)
            {
                through.vpn = link
                return .usable(through)
            }
            return .usable(
                Usable(
                    medium: medium(of: carrier, state: state), carrier: carrier,
                    gateway: underlay.gateway, vpn: link))
        }
        if kind == .loopback {
            return .usable(Usable(medium: .wired, carrier: link, gateway: nil))
        }
        // A CLAT in BPF on the uplink itself (NetworkManager's, networkd's) has no device of its
        // own: the IPv4 leaves by the uplink from its RFC 7335 address.
        let clatOnUplink = lookup.destination.family == .v4 && lookup.preferredSource.map(Self.isCLATAddress) == true
        return .usable(
            Usable(medium: medium(of: link, state: state), carrier: link, gateway: lookup.gateway, clat: clatOnUplink ? link : nil))
    }

    // MARK: CLAT (464XLAT)

    /// RFC 7335's IPv4 service continuity prefix, 192.0.0.0/29: the addresses a CLAT gives
    /// the host (clatd and tayga 192.0.0.1 or .2, Android 192.0.0.4, networkd's `cl-*` 192.0.0.1/32).
    static func isCLATAddress(_ address: IPAddress) -> Bool {
        address.family == .v4 && address.bytes[0] == 192 && address.bytes[1] == 0 && address.bytes[2] == 0 && address.bytes[3] < 8
    }

    /// Whether `link` is a CLAT: a tunnel whose every IPv4 address is in 192.0.0.0/29 (it
    /// has no IPv4 network of its own; a VPN has). What clatd, tayga, Android and networkd
    /// create alike; no name is trusted.
    mutating func isCLAT(_ link: Link, state: NetworkState) -> Bool {
        guard kind(of: link) == .tunnel else { return false }
        let ipv4 = state.addresses(of: link.index).lazy.filter { $0.address.family == .v4 }
        return !ipv4.isEmpty && ipv4.allSatisfy { Self.isCLATAddress($0.address) }
    }

    /// An IPv4 packet through `clat` leaves as IPv6 towards the NAT64: the way out is the
    /// kernel's IPv6 route to the destination's synthesised address (to the IPv6 probe
    /// while no prefix is known), judged as any IPv6 path — an IPv6 VPN stays a VPN.
    private mutating func translated(_ destination: IPAddress, by clat: Link, state: NetworkState, query: any KernelQueries) -> Verdict {
        let target = nat64?.synthesize(destination) ?? options.probeAddresses.v6
        switch query.lookupRoute(to: target) {
        case .failure(.blackhole): return .unusable(.blackhole)
        case .failure: return .unusable(.noRoute)
        case let .success(lookup):
            lookedUpInterfaces.insert(lookup.outputInterface)
            guard let link = state.links[lookup.outputInterface], !isCLAT(link, state: state) else { return .unusable(.noRoute) }
            let verdict = usability(of: lookup, state: state, query: query)
            guard case var .usable(through) = verdict else { return verdict }
            through.clat = clat
            return .usable(through)
        }
    }

    /// Why `link` cannot carry traffic of `family`, if it cannot.
    func problem(with link: Link, family: IPAddress.Family, state: NetworkState) -> UnreachableReason? {
        if !link.isUp { return .linkDown }
        if !link.hasCarrier { return .noCarrier }
        if link.flags.contains(.loopback) { return nil }
        return state.hasAddressForGlobalTraffic(on: link.index, family: family) ? nil : .noAddress
    }

    /// The best real route to `destination` through an available interface (up, with
    /// carrier, addressed, not a bridge port, not ignored): for each candidate, a FIB-match lookup restricted
    /// to it (a plain lookup with an output interface would invent an on-link route).
    /// Most specific wins, then the lowest metric.
    mutating func bestRoute(
        to destination: IPAddress, state: NetworkState, query: any KernelQueries,
        excludingTunnels: Bool, allowed: Set<InterfaceType>? = nil
    ) -> RouteLookup? {
        var best: RouteLookup?
        for entry in availableInterfaces() {
            guard let link = state.links[Int32(entry.index)] else { continue }
            // A CLAT is no VPN: a VPN's IPv4 may ride on it.
            guard !(excludingTunnels && entry.kind.isTunnel && !isCLAT(link, state: state)) else { continue }
            if let allowed, !allowed.contains(medium(of: link, state: state).interfaceType) { continue }
            guard
                case let .success(match) = query.lookupRoute(
                    to: destination, outputInterface: link.index,
                    matchingFIBEntry: true),
                match.type == RouteType.unicast
            else { continue }
            var candidate = match
            candidate.outputInterface = link.index
            if let current = best {
                let better =
                    candidate.destinationPrefixLength > current.destinationPrefixLength
                    || (candidate.destinationPrefixLength == current.destinationPrefixLength
                        && (candidate.priority ?? 0) < (current.priority ?? 0))
                if !better { continue }
            }
            best = candidate
        }
        return best
    }

    /// The medium of an interface; bridges, bonds, VLANs and macvlans take that of
    /// their members or lower device.
    mutating func medium(of link: Link, state: NetworkState, depth: Int = 0) -> Medium {
        let kind = kind(of: link)
        switch kind {
        case .wifi: return .wifi
        case .cellular: return .cellular
        case .bridge, .bond:
            guard depth < 8 else { return .wired }
            let members = state.members(of: link.index)
            let active = members.filter(\.hasCarrier)
            var best: Medium?
            for member in active.isEmpty ? members : active {
                let medium = medium(of: member, state: state, depth: depth + 1)
                if best == nil || medium.preference < best!.preference { best = medium }
                if medium == .wired { break } // nothing is preferred to it: a bridge of pod veths stops at the first
            }
            return best ?? .wired
        case .vlan, .macvlan:
            guard depth < 8, let lower = link.lowerIndex.flatMap({ state.links[$0] }) else { return .wired }
            return medium(of: lower, state: state, depth: depth + 1)
        default:
            return .wired
        }
    }

    /// A missing route is explained by what is missing underneath it; other reasons stand.
    mutating func explain(_ reason: UnreachableReason, _ state: NetworkState) -> UnreachableReason {
        reason == .noRoute ? explainMissingRoute(state) : reason
    }

    /// No route at all: say what is missing, from the interfaces that could carry a path.
    mutating func explainMissingRoute(_ state: NetworkState) -> UnreachableReason {
        // An available interface that is no tunnel has all the rest: only the route is missing.
        if availableInterfaces().contains(where: { !$0.kind.isTunnel && $0.kind != .loopback }) { return .noRoute }
        var candidates: [Link] = []
        for link in state.links.values where !options.isIgnored(link.name) {
            let kind = kind(of: link)
            if kind != .loopback && !kind.isTunnel { candidates.append(link) }
        }
        if candidates.isEmpty { return .noInterface }
        let up = candidates.filter(\.isUp)
        if up.isEmpty { return .linkDown }
        let connected = up.filter(\.hasCarrier)
        if connected.isEmpty { return .noCarrier }
        let addressed = connected.filter { state.hasAddressForGlobalTraffic(on: $0.index) }
        return addressed.isEmpty ? .noAddress : .noRoute
    }

    // MARK: The document

    mutating func describe(_ link: Link) -> Path.Interface {
        Path.Interface(name: link.name, index: Int(link.index), kind: kind(of: link))
    }

    mutating func describe(_ outcome: Outcome, state: NetworkState) -> Path.Route {
        let link = outcome.lookup.flatMap { state.links[$0.outputInterface] }
        var route = Path.Route(
            destination: text(of: outcome.destination), status: .unknown,
            interface: link?.name,
            gateway: outcome.lookup?.gateway.map { format($0, on: link) },
            source: outcome.lookup?.preferredSource?.description, nat64: outcome.synthesized?.description)
        guard outcome.lookupFailed == nil else { return route }
        switch outcome.result {
        case let .usable(usable): route.status = usable.medium.status
        case let .unusable(reason):
            route.status = .unreachable
            route.reason = explain(reason, state)
        }
        return route
    }

    private func knownText(of address: IPAddress) -> String? {
        addressTexts.first { $0.address == address }?.text
    }

    private func text(of address: IPAddress) -> String { knownText(of: address) ?? address.description }

    /// A resolver's address is kept the first time (resolv.conf names at most a few).
    private mutating func resolverText(of address: IPAddress) -> String {
        if let known = knownText(of: address) { return known }
        let text = address.description
        if addressTexts.count < 8 { addressTexts.append((address, text)) }
        return text
    }

    /// IPv6 link-local gateways mean nothing without their interface: "fe80::1%eth0".
    func format(_ address: IPAddress, on link: Link?) -> String {
        guard address.isIPv6LinkLocal, let link else { return address.description }
        return "\(address)%\(link.name)"
    }
}
