import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import Reachability
import SystemCalls
import TestTraits
import Testing

/// A running monitor follows the kernel, including the changes the kernel
/// announces with no route message at all.
@Suite("Monitor transitions (real kernel, network namespaces)", .needsNamespaces, .ownThreads)
struct MonitorTransitionTests {
    @Test("route deleted and added again")
    func routeDeleteAdd() async throws {
        try await withWatchedUplink("routeflip") { ns, monitor in
            #expect(monitor.currentPath?.status == .wired, "currentPath is there as soon as start() returns")
            try ns[0].ip("route del default")
            try await waitForPath(monitor, "no-route") { $0.reason == .noRoute }
            try ns[0].ip("route add default via 10.1.0.1 dev eth0")
            try await waitForPath(monitor, "wired again") { $0.status == .wired && $0.gateway == "10.1.0.1" }
        }
    }

    @Test("with no path, the reason follows links that carry none: down, up without carrier, gone")
    func reasonFollowsLinks() async throws {
        try await withWatchedUplink("reasons") { ns, monitor in
            try ns[0].ip("link set dev eth0 down")
            try await waitForPath(monitor, "link-down") { $0.reason == .linkDown }
            // No route is left to name eth0: only its own state says why there is no path.
            try ns[1].ip("link set dev up0 down")
            try ns[0].ip("link set dev eth0 up")
            try await waitForPath(monitor, "no-carrier") { $0.reason == .noCarrier }
            try ns[0].ip("link del dev eth0")
            try await waitForPath(monitor, "no-interface") { $0.reason == .noInterface }
        }
    }

    @Test("IPv4 announces a route removal before it unlinks the route: the monitor still ends right, every time")
    func routeRemovalAnnouncedEarly() async throws {
        try await withNamespaces("delrace", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            try ns[0].ip("link add name flap0 type veth peer name flap1")
            let namespace = NetworkNamespace(name: ns[0].name)
            let (control, query) = try namespace.perform { (try RtnetlinkControl(), try RtnetlinkQuery()) }
            // A slow listener, as real hosts have: subscribed, never reading, more than
            // half full. The kernel then yields after every broadcast, which is exactly
            // between announcing an IPv4 route removal and unlinking the route.
            // 600 flaps queue about 2.8 MB: over half of the 4 MiB buffer, with room left.
            let slowListener = try namespace.perform { try RtnetlinkSubscription(receiveBufferSize: 2 << 20) }
            try ns[0].ipBatch((0..<600).flatMap { _ in ["link set dev flap0 up", "link set dev flap0 down"] })
            let eth0 = try #require(try query.links().first { $0.name == "eth0" }).index
            let any = IPAddress("0.0.0.0")!, gateway = IPAddress("10.1.0.1")!
            let monitor = ReachabilityMonitor(options: try options(ns[0]))
            try monitor.start()
            defer { monitor.stop() }
            for cycle in 0..<150 {
                try control.route(add: false, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
                try await waitForPath(monitor, "no-route after removal \(cycle)", timeout: .seconds(2)) { $0.reason == .noRoute }
                try control.route(add: true, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
                try await waitForPath(monitor, "wired after cycle \(cycle)", timeout: .seconds(2)) { $0.status == .wired }
            }
            withExtendedLifetime(slowListener) {}
        }
    }

    @Test(
        "the uplink's link or last IPv4 address taken away hands the path to the other uplink, every time (the flush comes after the news)")
    func flushAnnouncedEarly() async throws {
        try await withNamespaces("flushrace", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            try ns[0].addUplink("eth1", subnet: "10.2.0", router: ns[1], peer: "up1", defaultRoute: false)
            try ns[0].ip("route add default via 10.2.0.1 dev eth1 metric 100")
            try ns[0].ip("link add name flap0 type veth peer name flap1")
            // The slow listener of routeRemovalAnnouncedEarly: the kernel yields after the
            // link's or address's message, before it flushes the IPv4 routes through it.
            let slowListener = try NetworkNamespace(name: ns[0].name).perform { try RtnetlinkSubscription(receiveBufferSize: 2 << 20) }
            try ns[0].ipBatch((0..<600).flatMap { _ in ["link set dev flap0 up", "link set dev flap0 down"] })
            let monitor = ReachabilityMonitor(options: try options(ns[0]))
            try monitor.start()
            defer { monitor.stop() }
            for cycle in 0..<40 {
                let address = cycle.isMultiple(of: 2)
                try ns[0].ip(address ? "addr del 10.1.0.2/24 dev eth0" : "link set dev eth0 down")
                try await waitForPath(monitor, "eth1 after cycle \(cycle)", timeout: .seconds(2)) { $0.interface?.name == "eth1" }
                try ns[0].ip(address ? "addr add 10.1.0.2/24 dev eth0" : "link set dev eth0 up")
                try ns[0].waitUntilOperational("eth0")
                try ns[0].ip("route add default via 10.1.0.1 dev eth0")
                try await waitForPath(monitor, "eth0 after cycle \(cycle)", timeout: .seconds(2)) { $0.interface?.name == "eth0" }
            }
            withExtendedLifetime(slowListener) {}
        }
    }

    @Test("admin down: IPv4 routes vanish without RTM_DELROUTE")
    func adminDown() async throws {
        try await withWatchedUplink("admindown") { ns, monitor in
            try ns[0].ip("link set dev eth0 down")
            try await waitForPath(monitor, "link-down") { $0.reason == .linkDown }
            try ns[0].ip("link set dev eth0 up")
            // The default route went with the link; nothing brings it back by itself.
            try await waitForPath(monitor, "no-route once up again") { $0.reason == .noRoute }
            try ns[0].ip("route add default via 10.1.0.1 dev eth0")
            try await waitForPath(monitor, "wired") { $0.status == .wired }
        }
    }

    @Test("carrier loss through the peer: the route stays, flagged linkdown, no route message")
    func carrierLoss() async throws {
        try await withWatchedUplink("carrier") { ns, monitor in
            try ns[1].ip("link set dev up0 down")
            let lost = try await waitForPath(monitor, "no-carrier") { $0.reason == .noCarrier }
            #expect(lost.interface == nil)
            #expect(try ns[0].ip("route show default").contains("linkdown"), "the kernel keeps the route")
            try ns[1].ip("link set dev up0 up")
            try await waitForPath(monitor, "carrier back") { $0.status == .wired }
        }
    }

    @Test("a link that came after the start, routed without an address, regains carrier: its routes count again (no route message)")
    func carrierBackOnLateLink() async throws {
        try await withWatchedUplink("latelink") { ns, monitor in
            try ns[0].sysctl("net.ipv4.conf.all.ignore_routes_with_linkdown=1")
            try ns[0].ip("link add name eth1 type veth peer name up1 netns \(ns[1].name)")
            try ns[0].ip("link set dev eth1 up")
            try ns[1].ip("link set dev up1 up")
            try ns[0].waitUntilOperational("eth1")
            // Half the address space each, more specific than the default: the IPv4 probe's lookup answers eth1
            // (which, having no address, the path reports as no-address).
            func ipv4Leaves(_ path: Path) -> String? { path.routes.first { $0.destination.contains(".") }?.interface }
            try ns[0].ip("route add 0.0.0.0/1 dev eth1")
            try ns[0].ip("route add 128.0.0.0/1 dev eth1")
            try await waitForPath(monitor, "by eth1") { ipv4Leaves($0) == "eth1" }
            try ns[1].ip("link set dev up1 down")
            try await waitForPath(monitor, "by eth0 while eth1 has no carrier") { $0.interface?.name == "eth0" }
            try ns[1].ip("link set dev up1 up")
            try await waitForPath(monitor, "by eth1 again") { ipv4Leaves($0) == "eth1" }
        }
    }

    @Test("address removed")
    func addressRemoved() async throws {
        try await withWatchedUplink("addrdel") { ns, monitor in
            try ns[0].ip("addr del 10.1.0.2/24 dev eth0")
            try await waitForPath(monitor, "no-address") { $0.reason == .noAddress }
        }
    }

    @Test("a policy rule added while watching moves the path (no route message at all)")
    func ruleAdded() async throws {
        try await withNamespaces("ruleadd", "router") { ns in
            try ns[0].addUplink(router: ns[1], defaultRoute: false)
            try ns[0].ip("route add default via 10.1.0.1 dev eth0 table 100")
            let monitor = ReachabilityMonitor(options: try options(ns[0]))
            try monitor.start()
            defer { monitor.stop() }
            #expect(monitor.currentPath?.reason == .noRoute)
            try ns[0].ip("rule add lookup 100 priority 1000")
            try await waitForPath(monitor, "wired through table 100") { $0.status == .wired }
        }
    }

    /// Neither a next hop's replacement (with `nexthop_compat_mode=0`) nor its removal (ever, for
    /// IPv4) sends a message for the routes that use it: only the next hop's own message says so.
    @Test("the default route's next-hop object replaced, then removed", arguments: [0, 1])
    func nextHopReplacedThenRemoved(compatibilityMode: Int) async throws {
        try await withNextHopDefaultRoute("nexthop\(compatibilityMode)", compatibilityMode: compatibilityMode) { ns, monitor in
            try await waitForPath(monitor, "by eth0") { $0.interface?.name == "eth0" }
            try ns[0].addUplink("eth1", subnet: "10.2.0", router: ns[1], peer: "up1", defaultRoute: false)
            try ns[0].ip("nexthop replace id 1 via 10.2.0.1 dev eth1")
            try await waitForPath(monitor, "by eth1") { $0.interface?.name == "eth1" }
            try ns[0].ip("nexthop del id 1")
            try await waitForPath(monitor, "no route") { $0.reason == .noRoute }
        }
    }

    /// A carrier loss takes the next-hop objects on the link, and the routes that name them, with no
    /// next-hop message and no IPv4 route message: only the link's own message says so.
    @Test("carrier lost and back under a default route that names a next-hop object, a second uplink beside it", arguments: [0, 1])
    func carrierLossUnderNextHop(compatibilityMode: Int) async throws {
        try await withNextHopDefaultRoute("nhcarrier\(compatibilityMode)", compatibilityMode: compatibilityMode) { ns, monitor in
            try ns[0].addUplink("eth1", subnet: "10.2.0", router: ns[1], peer: "up1", defaultRoute: false)
            try ns[0].ip("route add default via 10.2.0.1 dev eth1 metric 100")
            try await waitForPath(monitor, "by eth0") { $0.interface?.name == "eth0" }
            try ns[1].ip("link set dev up0 down")
            try await waitForPath(monitor, "by eth1 once eth0's carrier is gone") { $0.interface?.name == "eth1" }
            #expect(try !ns[0].ip("route show default").contains("nhid"), "the kernel took the route with its next hop")
            try ns[1].ip("link set dev up0 up")
            try ns[0].waitUntilOperational("eth0")
            try await expectAgreesWithFreshLook(monitor, ns[0])
        }
    }

    /// Removing a group's member moves the group's routes to the members left with no route
    /// message: only the member's and the group's own messages say so.
    @Test("a default route over a next-hop group of two uplinks: one member removed, then the other", arguments: [0, 1])
    func nextHopGroup(compatibilityMode: Int) async throws {
        try await withNextHopDefaultRoute("nhgroup\(compatibilityMode)", compatibilityMode: compatibilityMode) { ns, monitor in
            try ns[0].addUplink("eth1", subnet: "10.2.0", router: ns[1], peer: "up1", defaultRoute: false)
            try ns[0].ip("nexthop add id 2 via 10.2.0.1 dev eth1")
            try ns[0].ip("nexthop add id 10 group 1/2")
            try ns[0].ip("route replace default nhid 10")
            let members = ["eth0": (id: 1, gateway: "10.1.0.1"), "eth1": (id: 2, gateway: "10.2.0.1")]
            // The kernel picks one member by the flow's hash: the one the path names goes first.
            let first = try #require(
                try await waitForPath(monitor, "by either") { members[$0.interface?.name ?? ""] != nil }.interface?.name)
            let second = first == "eth0" ? "eth1" : "eth0"
            try ns[0].ip("nexthop del id \(members[first]!.id)")
            let moved = try await waitForPath(monitor, "by \(second)") { $0.interface?.name == second }
            #expect(moved.gateway == members[second]?.gateway)
            try ns[0].ip("nexthop del id \(members[second]!.id)")
            try await waitForPath(monitor, "no route") { $0.reason == .noRoute }
        }
    }

    /// With `nexthop_compat_mode=0` a FIB-match answer names the next-hop object only: no interface,
    /// no gateway. The route a VPN rides on is found by such lookups, restricted to each interface.
    @Test("a VPN over an uplink whose default route names a next-hop object", .needsTun, arguments: [0, 1])
    func vpnOverNextHopObject(compatibilityMode: Int) async throws {
        try await withNextHopDefaultRoute("vpnnh\(compatibilityMode)", compatibilityMode: compatibilityMode) { ns, monitor in
            try ns[0].openTun("tun0")
            try ns[0].ip("addr add 10.8.0.2/24 dev tun0")
            try ns[0].ip("link set dev tun0 up")
            try ns[0].ip("route add 0.0.0.0/1 dev tun0")
            try ns[0].ip("route add 128.0.0.0/1 dev tun0")
            let vpn = try await waitForPath(monitor, "vpn") { $0.vpn?.name == "tun0" }
            #expect(vpn.status == .wired)
            #expect(vpn.interface?.name == "eth0")
            #expect(vpn.gateway == "10.1.0.1")
        }
    }

    /// A watched uplink (eth0) whose default route names next-hop object 1, via the router,
    /// with `net.ipv4.nexthop_compat_mode` as given.
    private func withNextHopDefaultRoute(
        _ label: String, compatibilityMode: Int, _ body: ([TestNamespace], ReachabilityMonitor) async throws -> Void
    ) async throws {
        try await withWatchedUplink(label, defaultRoute: false) { ns, monitor in
            try ns[0].sysctl("net.ipv4.nexthop_compat_mode=\(compatibilityMode)")
            try ns[0].ip("nexthop add id 1 via 10.1.0.1 dev eth0")
            try ns[0].ip("route add default nhid 1")
            try await body(ns, monitor)
        }
    }

    @Test("a VPN coming up and going away while watching", .needsTun)
    func vpnComesAndGoes() async throws {
        try await withWatchedUplink("vpnlive") { ns, monitor in
            try ns[0].openTun("tun0")
            try ns[0].ip("addr add 10.8.0.2/24 dev tun0")
            try ns[0].ip("link set dev tun0 up")
            try ns[0].ip("route add 0.0.0.0/1 dev tun0")
            try ns[0].ip("route add 128.0.0.0/1 dev tun0")
            let vpn = try await waitForPath(monitor, "vpn") { $0.vpn?.name == "tun0" }
            #expect(vpn.status == .wired && vpn.interface?.name == "eth0")
            try ns[0].ip("link del dev tun0")
            try await waitForPath(monitor, "vpn gone") { $0.vpn == nil && $0.status == .wired }
        }
    }

    @Test("per-destination monitor follows its own route")
    func destinationMonitor() async throws {
        try await withNamespaces("destmon", "router") { ns in
            try ns[0].addUplink(router: ns[1], defaultRoute: false)
            let monitor = ReachabilityMonitor(host: "10.9.1.1", options: try options(ns[0]))
            try monitor.start()
            defer { monitor.stop() }
            #expect(monitor.currentPath?.status == .unreachable)
            try ns[0].ip("route add 10.9.0.0/16 via 10.1.0.1 dev eth0")
            let path = try await waitForPath(monitor, "a route to 10.9.1.1") { $0.status == .wired }
            #expect(path.destination == "10.9.1.1")
        }
    }
}
