import EmbeddedKernel
import IPAddresses
import Netlink
import TestTraits
import Testing

@testable import ReachabilityCore

/// The kernel's answers are asked again only where a message says they may have changed
/// (`RouteLookupMemo`), and a path made from kept answers is the one the kernel gives now.
/// On threads of its own: the random test's cases run for seconds on a busy machine, and on
/// Swift's shared pool (a thread per CPU) they held up every other suite's waits meanwhile.
@Suite(.ownThreads) struct RouteLookupMemoTests {
    static let probe4 = IPAddress(MonitorOptions.defaultProbeIPv4)!
    static let probe6 = IPAddress(MonitorOptions.defaultProbeIPv6)!

    /// What the kernel was asked while `body` ran.
    static func asked(_ kernel: EmbeddedKernel, during body: () -> Void) -> [IPAddress] {
        let before = kernel.asked.count
        body()
        return Array(kernel.asked.dropFirst(before))
    }

    /// What `change` had the kernel asked, once the watcher read it.
    static func asked(_ kernel: EmbeddedKernel, _ watcher: EmbeddedPathWatcher, after change: () -> Void) -> [IPAddress] {
        asked(kernel) {
            change()
            watcher.read()
        }
    }

    /// The two families' FIBs are apart: an IPv4 route's removal leaves the IPv6 probe's answer as it was.
    @Test func anIPv4RouteAsksAboutIPv4Only() throws {
        let (kernel, watcher) = try EmbeddedWatcherTests.uplinkHost()
        let asked = Self.asked(kernel, watcher) { kernel.deleteRoute(EmbeddedKernel.uplinkRoute4) }
        #expect(asked == [Self.probe4])
        #expect(watcher.path?.ipv4 == false)
        #expect(watcher.path?.ipv6 == true, "the IPv6 probe's kept answer")
        #expect(watcher.path?.status == .wired)
    }

    @Test func anIPv6RouteAsksAboutIPv6Only() throws {
        let (kernel, watcher) = try EmbeddedWatcherTests.uplinkHost()
        let asked = Self.asked(kernel, watcher) { kernel.deleteRoute(EmbeddedKernel.uplinkRoute6) }
        #expect(asked == [Self.probe6])
        #expect(watcher.path?.ipv4 == true && watcher.path?.ipv6 == false)
    }

    /// A route that covers the IPv4 probe but not the resolver leaves the resolver's answer as it was.
    @Test func aRouteAsksAboutTheAddressesItCovers() throws {
        let (kernel, watcher) = try EmbeddedWatcherTests.uplinkHost()
        let resolver = IPAddress("192.0.2.53")!
        watcher.engine.dnsServers = DNSServers(source: .resolvConf, servers: [.init(address: resolver)])
        kernel.addRoute(EmbeddedKernel.Route(IPAddress("198.41.0.0")!, prefixLength: 16, outputInterface: EmbeddedKernel.uplink))
        watcher.read()
        kernel.addUplink("eth1", index: 3, subnet: "198.51.100", defaultRoute: false)
        watcher.read()
        let asked = Self.asked(kernel, watcher) {
            kernel.addRoute(EmbeddedKernel.Route(Self.probe4, prefixLength: 32, outputInterface: 3))
        }
        #expect(asked == [Self.probe4])
        #expect(watcher.path?.interface?.name == "eth1")
        #expect(watcher.path?.dns?.usable == ["192.0.2.53"])
    }

    /// A link's message, a rule's, a next hop's, an address's family: everything they may move is asked again.
    @Test func linksRulesNextHopsAndAddressesAskAgain() throws {
        let (kernel, watcher) = try EmbeddedWatcherTests.uplinkHost()
        kernel.addUplink("eth1", index: 3, subnet: "198.51.100", defaultRoute: false)
        watcher.read()
        #expect(Set(Self.asked(kernel, watcher) { kernel.setLink(3, carrier: false) }) == [Self.probe4, Self.probe6])
        #expect(Set(Self.asked(kernel, watcher) { kernel.changeRule() }) == [Self.probe4, Self.probe6])
        #expect(Set(Self.asked(kernel, watcher) { kernel.removeNextHop(usedBy: []) }) == [Self.probe4, Self.probe6])
        let address = InterfaceAddress(interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("2001:db8::99")!, prefixLength: 64)
        let asked = Self.asked(kernel, watcher) { kernel.addAddress(address) }
        #expect(asked.allSatisfy { $0.family == .v6 })
    }

    /// A re-check distrusts what the look before it was told: the IPv4 removal announced before
    /// the route is unlinked is seen at 5 ms, the IPv6 probe asked again with it.
    @Test func aRecheckAsksEverythingAgain() throws {
        let (kernel, watcher) = try EmbeddedWatcherTests.uplinkHost()
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4, unlinkedAfter: .milliseconds(1))
        watcher.read()
        #expect(watcher.path?.ipv4 == true, "at once the kernel still answers with the route")
        #expect(Set(Self.asked(kernel) { watcher.advance(by: .microseconds(250)) }) == [Self.probe4, Self.probe6])
        watcher.advance(by: .microseconds(4_750))
        #expect(watcher.path?.ipv4 == false)
    }

    /// Overrun, resumed: a re-read of the state forgets every answer.
    @Test func aRereadForgetsEverything() throws {
        let (kernel, watcher) = try EmbeddedWatcherTests.uplinkHost()
        #expect(watcher.engine.answersKept > 0)
        watcher.resumed()
        #expect(Set(Self.asked(kernel) { watcher.resumed() }) == [Self.probe4, Self.probe6])
        #expect(Set(Self.asked(kernel, watcher) { kernel.overrun() }) == [Self.probe4, Self.probe6])
    }

    /// A daemon answers `Route()` for any destination, and watches many hosts: the answers kept are bounded.
    @Test func answersKeptAreBounded() throws {
        let (_, watcher) = try EmbeddedWatcherTests.uplinkHost()
        for index in 0..<3_000 {
            let address = IPAddress("10.\(index >> 8 & 255).\(index & 255).1")!
            _ = watcher.engine.evaluate(destination: address.description, addresses: [address], watch: false)
        }
        #expect(watcher.engine.answersKept <= RouteLookupMemo.capacity)
    }

    /// Over random changes of routes, links, carriers, addresses and rules in both families, on two
    /// uplinks, the path made from the kept answers is the path made from the kernel's answers now
    /// (a second engine on the same kernel, made to ask everything again each time).
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func keptAnswersAreTheKernelsNow(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let (kernel, watcher) = try EmbeddedWatcherTests.uplinkHost()
        kernel.addUplink("eth1", index: 3, subnet: "198.51.100", metric: 100)
        let eth1IPv6 = InterfaceAddress(interfaceIndex: 3, address: IPAddress("2001:db8:1::2")!, prefixLength: 64)
        kernel.addAddress(eth1IPv6)
        let eth1IPv4 = InterfaceAddress(interfaceIndex: 3, address: IPAddress("198.51.100.2")!, prefixLength: 24)
        let routes: [EmbeddedKernel.Route] = [
            EmbeddedKernel.uplinkRoute4, EmbeddedKernel.uplinkRoute6,
            .defaultRoute(via: IPAddress("198.51.100.1")!, interface: 3, metric: 100),
            .defaultRoute(via: IPAddress("fe80::2")!, interface: 3, metric: 512),
            EmbeddedKernel.Route(Self.probe4, prefixLength: 32, outputInterface: 3),
            EmbeddedKernel.Route(IPAddress("198.41.0.0")!, prefixLength: 16, outputInterface: 2),
            EmbeddedKernel.Route(IPAddress("2001:503::")!, prefixLength: 32, outputInterface: 3),
            EmbeddedKernel.Route(IPAddress("203.0.113.0")!, prefixLength: 24, outputInterface: 2),
            .refusing(Self.probe6, prefixLength: 128, type: RouteType.unreachable),
            .refusing(IPAddress("198.41.0.0")!, prefixLength: 24, type: RouteType.blackhole)
        ]
        watcher.read()
        // Subscribed as the watcher is, and made to ask the kernel everything each time: the truth.
        let reference = try EmbeddedPathWatcher(kernel: kernel)
        var compared = 0
        for _ in 0..<1_500 {
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    let route = routes.randomElement(using: &random)!
                    if kernel.hasRoute(route) { kernel.deleteRoute(route) } else { kernel.addRoute(route) }
                case 5:
                    kernel.setLink(Int32.random(in: 2...3, using: &random), up: Bool.random(using: &random))
                case 6:
                    kernel.setLink(Int32.random(in: 2...3, using: &random), carrier: Bool.random(using: &random))
                case 7:
                    let address = Bool.random(using: &random) ? eth1IPv4 : eth1IPv6
                    if Bool.random(using: &random) { kernel.addAddress(address) } else { kernel.removeAddress(address) }
                case 8:
                    kernel.changeRule()
                default:
                    break // a read with nothing new
                }
            }
            watcher.read()
            reference.read()
            let kept = watcher.engine.evaluateDefaultPath(watch: false)
            reference.engine.lookAgain()
            let now = reference.engine.evaluateDefaultPath(watch: false)
            #expect(kept.isSamePath(as: now), "seed \(seed), after \(compared) changes")
            if !kept.isSamePath(as: now) { return }
            compared += 1
        }
    }
}
