import NamespaceTesting
import Reachability
import TestTraits
import Testing

/// One kernel configuration each, evaluated once, in namespaces of their own.
@Suite("Path scenarios (real kernel, network namespaces)", .needsNamespaces, .ownThreads)
struct PathScenarioTests {
    @Test("wired via veth")
    func wired() async throws {
        try await withNamespaces("wired", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let path = try path(ns[0])
            #expect(path.status == .wired)
            #expect(path.reason == nil)
            #expect(path.interface?.name == "eth0")
            #expect(path.interface?.kind == .veth)
            #expect(path.gateway == "10.1.0.1")
            #expect(path.ipv4 && !path.ipv6)
            #expect(path.vpn == nil && !path.expensive)
            #expect(path.routes.first?.source == "10.1.0.2")
            #expect(path.interfaces.contains { $0.name == "eth0" && $0.carrier && $0.addresses.first == "10.1.0.2/24" })
        }
    }

    @Test("no default route is no-route")
    func noDefaultRoute() async throws {
        try await withNamespaces("noroute", "router") { ns in
            try ns[0].addUplink(router: ns[1], defaultRoute: false)
            let path = try path(ns[0])
            #expect(path.status == .unreachable)
            #expect(path.reason == .noRoute)
            #expect(path.interface == nil)
        }
    }

    @Test("no interface but loopback is no-interface")
    func noInterface() async throws {
        try await withNamespaces("empty") { ns in
            let path = try path(ns[0])
            #expect(path.status == .unreachable)
            #expect(path.reason == .noInterface)
        }
    }

    @Test("blackhole default is blackhole; unreachable and prohibit defaults are no-route")
    func blackholeAndUnreachable() async throws {
        try await withNamespaces("blackhole", "router") { ns in
            try ns[0].addUplink(router: ns[1], defaultRoute: false)
            try ns[0].ip("route add blackhole default")
            #expect(try path(ns[0]).reason == .blackhole)
            try ns[0].ip("route replace unreachable default")
            #expect(try path(ns[0]).reason == .noRoute)
            try ns[0].ip("route replace prohibit default")
            #expect(try path(ns[0]).reason == .noRoute)
        }
    }

    @Test("a default route only in another table, reached by an ip rule")
    func policyRouting() async throws {
        try await withNamespaces("rule", "router") { ns in
            try ns[0].addUplink(router: ns[1], defaultRoute: false)
            try ns[0].ip("route add default via 10.1.0.1 dev eth0 table 100")
            #expect(try path(ns[0]).reason == .noRoute)
            try ns[0].ip("rule add to 198.41.0.0/16 lookup 100 priority 1000")
            let path = try path(ns[0])
            #expect(path.status == .wired)
            #expect(path.gateway == "10.1.0.1")
        }
    }

    @Test("VPN split default (0/1 + 128/1) over a held-open tun: wired, with vpn", .needsTun)
    func splitDefaultVPN() async throws {
        try await withNamespaces("vpn", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            try ns[0].openTun("tun0")
            try ns[0].ip("addr add 10.8.0.2/24 dev tun0")
            try ns[0].ip("link set dev tun0 up")
            try ns[0].ip("route add 0.0.0.0/1 dev tun0")
            try ns[0].ip("route add 128.0.0.0/1 dev tun0")
            let path = try path(ns[0])
            #expect(path.status == .wired)
            #expect(path.vpn?.name == "tun0")
            #expect(path.vpn?.kind == .tunnel)
            #expect(path.interface?.name == "eth0", "the interface is the one the tunnel rides on")
            #expect(path.gateway == "10.1.0.1")
            #expect(path.routes.first?.interface == "tun0", "the kernel's own answer is the tunnel")
        }
    }

    @Test("a tun without its process has no carrier", .needsTun)
    func deadTunnel() async throws {
        try await withNamespaces("deadtun", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            try ns[0].ip("tuntap add dev tun0 mode tun")
            try ns[0].ip("addr add 10.8.0.2/24 dev tun0")
            try ns[0].ip("link set dev tun0 up")
            try ns[0].ip("route add 0.0.0.0/1 dev tun0")
            try ns[0].ip("route add 128.0.0.0/1 dev tun0")
            let path = try path(ns[0])
            #expect(path.status == .unreachable)
            #expect(path.reason == .noCarrier)
        }
    }

    @Test("IPv6 only, with a link-local gateway")
    func ipv6LinkLocalGateway() async throws {
        try await withNamespaces("v6", "router") { ns in
            try ns[0].ip("link add name eth0 type veth peer name up0 netns \(ns[1].name)")
            try ns[0].ip("addr add 2001:db8:1::2/64 dev eth0 nodad")
            try ns[0].ip("link set dev eth0 up")
            try ns[1].ip("link set dev up0 up")
            try ns[0].waitUntilOperational("eth0")
            try ns[0].ip("-6 route add default via fe80::1 dev eth0")
            let path = try path(ns[0])
            #expect(path.status == .wired)
            #expect(path.ipv6 && !path.ipv4)
            #expect(path.gateway == "fe80::1%eth0")
            #expect(path.interface?.name == "eth0")
        }
    }

    @Test("a tentative IPv6 address is not usable: no-address")
    func tentativeAddress() async throws {
        try await withNamespaces("tentative", "router") { ns in
            try ns[0].ip("link add name eth0 type veth peer name up0 netns \(ns[1].name)")
            try ns[0].sysctl("net.ipv6.conf.eth0.accept_dad=1")
            // 30 probes a second apart: the address stays tentative for 30 s, long enough to look
            // on a loaded machine (one probe, the default, ended before a CI run looked).
            try ns[0].sysctl("net.ipv6.conf.eth0.dad_transmits=30")
            try ns[0].ip("link set dev eth0 up")
            try ns[1].ip("link set dev up0 up")
            try ns[0].waitUntilOperational("eth0")
            try ns[0].ip("addr add 2001:db8:1::2/64 dev eth0")
            try ns[0].ip("-6 route add default via 2001:db8:1::1 dev eth0")
            let path = try path(ns[0])
            #expect(path.status == .unreachable)
            #expect(path.reason == .noAddress)
        }
    }

    @Test("ECMP default across two uplinks")
    func ecmp() async throws {
        try await withNamespaces("ecmp", "router") { ns in
            try ns[0].addUplink("eth0", subnet: "10.1.0", router: ns[1], peer: "up0", defaultRoute: false)
            try ns[0].addUplink("eth1", subnet: "10.2.0", router: ns[1], peer: "up1", defaultRoute: false)
            try ns[0].ip("route add default nexthop via 10.1.0.1 dev eth0 nexthop via 10.2.0.1 dev eth1")
            let path = try path(ns[0])
            #expect(path.status == .wired)
            #expect(["eth0", "eth1"].contains(path.interface?.name ?? ""))
            #expect(["10.1.0.1", "10.2.0.1"].contains(path.gateway ?? ""))
        }
    }

    @Test("a bridge uplink is wired through its member")
    func bridgeUplink() async throws {
        try await withNamespaces("bridge", "router") { ns in
            try ns[0].ip("link add name br0 type bridge")
            try ns[0].ip("link add name eth0 type veth peer name up0 netns \(ns[1].name)")
            try ns[0].ip("link set dev eth0 master br0")
            try ns[0].ip("link set dev eth0 up")
            try ns[1].ip("addr add 10.1.0.1/24 dev up0")
            try ns[1].ip("link set dev up0 up")
            try ns[0].ip("addr add 10.1.0.2/24 dev br0")
            try ns[0].ip("link set dev br0 up")
            try ns[0].ip("route add default via 10.1.0.1 dev br0")
            let monitor = ReachabilityMonitor(options: try options(ns[0]))
            try monitor.start()
            defer { monitor.stop() }
            // A bridge port needs a moment to forward; the bridge gets carrier then.
            let path = try await waitForPath(monitor, "the bridge to forward") { $0.status == .wired }
            #expect(path.interface?.name == "br0")
            #expect(path.interface?.kind == .bridge)
        }
    }

    @Test("per-destination: a path where the default has none, and none where nothing routes")
    func perDestination() async throws {
        try await withNamespaces("dest", "router") { ns in
            try ns[0].addUplink(router: ns[1], defaultRoute: false)
            try ns[0].ip("route add 10.9.0.0/16 via 10.1.0.1 dev eth0")
            #expect(try path(ns[0]).status == .unreachable)
            let reachable = try path(ns[0], to: .host("10.9.1.1"))
            #expect(reachable.status == .wired)
            #expect(reachable.destination == "10.9.1.1")
            #expect(reachable.gateway == "10.1.0.1")
            #expect(reachable.routes.map(\.destination) == ["10.9.1.1"])
            let unreachable = try path(ns[0], to: .host("10.10.1.1"))
            #expect(unreachable.status == .unreachable)
            #expect(unreachable.reason == .noRoute)
            let named = try path(ns[0], to: .host("localhost"))
            #expect(named.status == .wired)
            #expect(named.interface?.kind == .loopback)
        }
    }

    @Test("ignored interfaces are never the path")
    func ignoredInterface() async throws {
        try await withNamespaces("ignore", "router") { ns in
            try ns[0].addUplink("docker0", subnet: "10.3.0", router: ns[1], peer: "up3", defaultRoute: false)
            try ns[0].addUplink("eth0", subnet: "10.1.0", router: ns[1], peer: "up0", defaultRoute: false)
            try ns[0].ip("route add default via 10.3.0.1 dev docker0 metric 10")
            try ns[0].ip("route add default via 10.1.0.1 dev eth0 metric 100")
            let plain = try path(ns[0])
            #expect(plain.interface?.name == "docker0")
            let options = try options(ns[0], ignore: ["docker*"], metered: ["eth*"])
            let path = try ReachabilityMonitor.path(options: options)
            #expect(path.interface?.name == "eth0")
            #expect(path.gateway == "10.1.0.1")
            #expect(path.expensive, "eth0 is marked metered")
            #expect(!path.interfaces.contains { $0.name == "docker0" })
        }
    }
}
