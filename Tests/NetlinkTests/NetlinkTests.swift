import Glibc
import IPAddresses
import NamespaceTesting
import SystemCalls
import TestTraits
import Testing

@testable import Netlink

/// The netlink layer against the kernel, inside namespaces reached through setns.
@Suite("Netlink (real kernel, network namespaces; addresses as any user)", .ownThreads)
struct NetlinkTests {
    @Test("dumps see what ip created; lookups name the route's parts; failures keep their kind", .needsNamespaces)
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
            let match = try query.lookupRoute(
                to: IPAddress("192.0.2.7")!, outputInterface: eth0.index,
                matchingFIBEntry: true
            ).get()
            #expect(match.destinationPrefixLength == 0)
            #expect(match.gateway == IPAddress("10.1.0.1"))
            #expect(
                query.lookupRoute(to: IPAddress("192.0.2.7")!, outputInterface: 1, matchingFIBEntry: true)
                    == .failure(.unreachable))
        }
    }

    @Test("the subscription sees link, address and route events, and reports an overrun", .needsNamespaces)
    func events() async throws {
        try await withNamespaces("nlev") { ns in
            let subscription = try NetworkNamespace(name: ns[0].name).perform { try RtnetlinkSubscription() }
            #expect(subscription.receiveBufferSize >= 4 << 20, "SO_RCVBUFFORCE as root")
            try ns[0].ip("link add name a0 type veth peer name a1")
            try ns[0].ip("addr add 10.5.0.1/24 dev a0")
            try ns[0].ip("link set dev a0 up")
            var messages: [RtnetlinkMessage] = []
            _ = try subscription.drain {
                messages.append($0); return false
            }
            #expect(messages.contains { if case let .link(link) = $0 { link.name == "a0" } else { false } })
            #expect(messages.contains { if case let .address(address) = $0 { address.cidr == "10.5.0.1/24" } else { false } })
            #expect(messages.contains { if case let .route(route) = $0 { route.family == .v4 } else { false } })

            let tiny = try NetworkNamespace(name: ns[0].name).perform { try RtnetlinkSubscription(receiveBufferSize: 1) }
            try ns[0].ipBatch((0..<200).flatMap { _ in ["link set dev a0 down", "link set dev a0 up"] })
            #expect(try tiny.drain { _ in false } == .overrun)
        }
    }

    @Test(
        "a route names the interfaces it leaves by, each next hop's for a multipath route; link-local and multicast ones carry no global traffic",
        .needsNamespaces)
    func routeInterfaces() async throws {
        try await withNamespaces("nlroute") { ns in
            let subscription = try NetworkNamespace(name: ns[0].name).perform { try RtnetlinkSubscription() }
            try ns[0].ipBatch([
                "link add name m0 type veth peer name n0", "link add name m1 type veth peer name n1",
                "link set dev n0 up", "link set dev n1 up", "link set dev m0 up", "link set dev m1 up",
                "route add 0.0.0.0/1 dev m0", "route add 128.0.0.0/1 nexthop dev m0 nexthop dev m1"
            ])
            let index = { (name: String) in Int32(try ns[0].ip("-o link show dev \(name)").prefix { $0 != ":" })! }
            var routes: [RouteChange] = []
            try await Task.sleep(for: .milliseconds(200)) // the link-local addresses (and their routes) follow the links
            _ = try subscription.drain {
                if case let .route(route) = $0 { routes.append(route) }
                return false
            }
            let (m0, m1) = (try index("m0"), try index("m1"))
            #expect(routes.first { $0.family == .v4 && $0.destination == IPAddress("0.0.0.0") }?.outputInterfaces == [m0])
            #expect(routes.first { $0.destination == IPAddress("128.0.0.0") }?.outputInterfaces == [m0, m1])
            func v6(startingWith byte: UInt8) -> [RouteChange] {
                routes.filter { route in route.family == .v6 && route.destination.map { Array($0.bytes)[0] == byte } == true }
            }
            let (linkLocal, multicast) = (v6(startingWith: 0xFE), v6(startingWith: 0xFF))
            #expect(!linkLocal.isEmpty && !multicast.isEmpty, "\(routes)")
            #expect(
                !(linkLocal + multicast).contains { $0.mayCarryGlobalTraffic },
                "\((linkLocal + multicast).filter { $0.mayCarryGlobalTraffic })")
            #expect(routes.filter { $0.family == .v4 }.allSatisfy { $0.mayCarryGlobalTraffic })
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

    /// reachd formats addresses itself; glibc's `inet_ntop` is what the text must match,
    /// byte for byte: every pattern of zero words (where "::" goes, ties, the ends),
    /// the embedded IPv4 forms, the widths of each number, and random addresses.
    @Test("addresses print as inet_ntop prints them")
    func ipAddressMatchesInetNtop() {
        func glibc(_ bytes: [UInt8]) -> String {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let family = bytes.count == 4 ? AF_INET : AF_INET6
            _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        var generator = SystemRandomNumberGenerator()
        var cases: [[UInt8]] = []
        for byte in [0, 1, 9, 10, 99, 100, 199, 255] as [UInt8] {
            cases.append([byte, 255 - byte, byte, 0])
        }
        let words: [UInt16] = [0x1, 0xf, 0x10, 0xab, 0x100, 0xfff, 0x1000, 0xffff, 0x2001]
        for zeros in 0..<256 {
            for value in words {
                cases.append(
                    (0..<8).flatMap { index -> [UInt8] in
                        let word = zeros & (1 << index) != 0 ? 0 : value
                        return [UInt8(word >> 8), UInt8(word & 0xff)]
                    })
            }
        }
        for prefix in [
            [UInt8](repeating: 0, count: 12), [UInt8](repeating: 0, count: 10) + [0xff, 0xff],
            [UInt8](repeating: 0, count: 10) + [0xff, 0xfe], [0, 0x64, 0xff, 0x9b] + [UInt8](repeating: 0, count: 8)
        ] {
            for last in [[0, 0, 0, 1], [0, 0, 1, 0], [192, 0, 2, 1], [0, 0, 0, 0], [1, 0, 0, 0]] as [[UInt8]] {
                cases.append(prefix + last)
            }
        }
        for _ in 0..<20_000 {
            var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Zero some words, so that runs of them are common.
            for index in 0..<8 where Bool.random(using: &generator) { (bytes[2 * index], bytes[2 * index + 1]) = (0, 0) }
            cases.append(bytes)
            cases.append(Array(bytes.prefix(4)))
        }
        let wrong = cases.filter { IPAddress(bytes: $0)?.description != glibc($0) }
        #expect(wrong.isEmpty, "\(wrong.prefix(5).map { "\(IPAddress(bytes: $0)!) vs \(glibc($0))" })")
        #expect(cases.count > 22_000)
    }
}
