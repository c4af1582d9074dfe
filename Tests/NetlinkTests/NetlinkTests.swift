import NamespaceTesting
@testable import Netlink
import SystemCalls
import TestTraits
import Testing

/// The netlink layer against the kernel, inside namespaces reached through setns.
@Suite("Netlink (real kernel)", .needsRoot, .ownThreads)
struct NetlinkTests {
    @Test("dumps see what ip created; lookups name the route's parts; failures keep their kind")
    func dumpsAndLookups() async throws {
        try await withNamespaces("nl", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            try ns[0].ip("route add blackhole 198.51.100.0/24")
            try ns[0].ip("route add unreachable 203.0.113.0/25")
            try ns[0].ip("route add prohibit 203.0.113.128/25")
            let query = try NetworkNamespace(name: ns[0].name).perform { try RtnetlinkQuery() }
            let links = try query.links()
            let eth0 = try #require(links.first { $0.name == "eth0" })
            #expect(eth0.kind == "veth")
            #expect(eth0.isUp && eth0.hasCarrier)
            #expect(links.contains { $0.name == "lo" && $0.flags.contains(.loopback) })
            let addresses = try query.addresses()
            #expect(addresses.contains { $0.interfaceIndex == eth0.index && $0.cidr == "10.1.0.2/24" })

            let route = try query.lookupRoute(to: IPAddress("192.0.2.7")!).get()
            #expect(route.outputInterface == eth0.index)
            #expect(route.gateway == IPAddress("10.1.0.1"))
            #expect(route.preferredSource == IPAddress("10.1.0.2"))
            #expect(query.lookupRoute(to: IPAddress("198.51.100.1")!) == .failure(.blackhole))
            #expect(query.lookupRoute(to: IPAddress("203.0.113.1")!) == .failure(.unreachable))
            #expect(query.lookupRoute(to: IPAddress("203.0.113.129")!) == .failure(.prohibited))
            #expect(query.lookupRoute(to: IPAddress("2001:db8::1")!) == .failure(.noRoute))

            // FIB match restricted to an interface: the default entry through eth0, and
            // nothing through lo (a plain lookup would invent an on-link route there).
            let match = try query.lookupRoute(to: IPAddress("192.0.2.7")!, outputInterface: eth0.index,
                                              matchingFIBEntry: true).get()
            #expect(match.destinationPrefixLength == 0)
            #expect(match.gateway == IPAddress("10.1.0.1"))
            #expect(query.lookupRoute(to: IPAddress("192.0.2.7")!, outputInterface: 1, matchingFIBEntry: true)
                == .failure(.unreachable))
        }
    }

    @Test("the subscription sees link, address and route events, and reports an overrun")
    func events() async throws {
        try await withNamespaces("nlev") { ns in
            let subscription = try NetworkNamespace(name: ns[0].name).perform { try RtnetlinkSubscription() }
            #expect(subscription.receiveBufferSize >= 4 << 20, "SO_RCVBUFFORCE as root")
            try ns[0].ip("link add name a0 type veth peer name a1")
            try ns[0].ip("addr add 10.5.0.1/24 dev a0")
            try ns[0].ip("link set dev a0 up")
            var messages: [RtnetlinkMessage] = []
            _ = try subscription.drain { messages.append($0); return false }
            #expect(messages.contains { if case let .link(link) = $0 { link.name == "a0" } else { false } })
            #expect(messages.contains { if case let .address(address) = $0 { address.cidr == "10.5.0.1/24" } else { false } })
            #expect(messages.contains { if case let .route(route) = $0 { route.family == .v4 } else { false } })

            let tiny = try NetworkNamespace(name: ns[0].name).perform { try RtnetlinkSubscription(receiveBufferSize: 1) }
            try ns[0].ipBatch((0 ..< 200).flatMap { _ in ["link set dev a0 down", "link set dev a0 up"] })
            #expect(try tiny.drain { _ in false } == .overrun)
        }
    }

    @Test("addresses parse and print")
    func ipAddress() {
        #expect(IPAddress("10.1.0.2")?.description == "10.1.0.2")
        #expect(IPAddress("2001:DB8::1")?.description == "2001:db8::1")
        #expect(IPAddress("fe80::1")?.isIPv6LinkLocal == true)
        #expect(IPAddress("10.1.0.256") == nil)
        #expect(IPAddress("fe80::1%eth0") == nil)
    }
}
