import EmbeddedKernel
import IPAddresses
import Netlink
import Reachability
import SystemCalls
import Testing

/// When a monitor of a host name looks the name up again: when its path leaves another
/// way, by the daemon's rule (`Path.leavesTheSameWay`), on an embedded kernel.
/// `localhost` is answered by /etc/hosts: nothing is asked of a DNS server.
@Suite("A host name looked up again when its path leaves another way", .ownThreads)
struct HostResolutionTests {
    @Test("another interface, then another next hop on the same interface: each a lookup; an unrelated address none")
    func lookedUpAgain() async throws {
        let kernel = EmbeddedKernel()
        kernel.addLoopback()
        kernel.addUplink()
        let monitor = ReachabilityMonitor(options: kernel.options(), target: .host("localhost"))
        try monitor.start()
        defer { monitor.stop() }
        _ = try await waitForPath(monitor, "the path to localhost") { $0.interface?.name == "lo" }
        #expect(monitor.statistics.resolutions == 0, "looked up once, at the start")

        // 127.0.0.1 routed out of eth0: another interface.
        let viaOne = EmbeddedKernel.Route(
            IPAddress("127.0.0.1")!, prefixLength: 32, outputInterface: EmbeddedKernel.uplink,
            gateway: IPAddress("192.0.2.1"), metric: 100)
        kernel.addRoute(viaOne)
        _ = try await waitForPath(monitor, "localhost through eth0") { $0.gateway == "192.0.2.1" }
        #expect(monitor.statistics.resolutions == 1)

        // Another next hop, same interface and status: the old rule (status, interface, VPN) missed it.
        kernel.addRoute(
            .init(
                IPAddress("127.0.0.1")!, prefixLength: 32, outputInterface: EmbeddedKernel.uplink,
                gateway: IPAddress("192.0.2.254"), metric: 50))
        // The first lookup may still be running: then this one follows it rather than being dropped.
        _ = try await waitForPath(monitor, "localhost through another gateway, looked up again") {
            $0.gateway == "192.0.2.254" && monitor.statistics.resolutions == 2
        }

        // An address that changes nothing of the way out: no lookup.
        let published = monitor.statistics.published
        kernel.addAddress(InterfaceAddress(interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("192.0.2.77")!, prefixLength: 24))
        _ = try await waitForPath(monitor, "the address seen") { _ in monitor.statistics.published > published }
        #expect(monitor.statistics.resolutions == 2)
    }
}
