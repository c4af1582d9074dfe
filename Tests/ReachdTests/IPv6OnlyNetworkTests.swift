import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Networks as they are, under the daemon: a real 464XLAT (tayga as NAT64 and CLAT,
/// unbound's DNS64) and a host that sleeps (a logind stand-in on a private system bus).
@Suite("Networks as they are under reachd: 464XLAT, DNS64, sleep and resume", .needsNamespaces, .ownThreads)
struct IPv6OnlyNetworkTests {
    static func path(_ daemon: DaemonProcess) -> Path? {
        try? ReachabilityClient(endpoint: .address(daemon.address)).blocking.currentPath()
    }

    static func reachctl(_ namespace: TestNamespace, _ daemon: DaemonProcess, _ arguments: String...) throws -> String {
        try namespace.exec([DaemonProcess.reachctl] + arguments + ["--bus", daemon.socket]).output
    }

    @Test(
        "NAT64 found through DNS64 (RFC 7050): IPv4 by name only, an IPv4 literal through the NAT64; a CLAT: IPv4, no VPN, full connectivity through both translators",
        .timeLimit(.minutes(3)), .needsRootForTayga)
    func xlat() async throws {
        try await withScratch { scratch in
            try await withNamespaces("xlat", "gateway", "internet") { ns in
                let network = try XLATNetwork(host: ns[0], gateway: ns[1], internet: ns[2], directory: scratch)
                defer { network.stop() }
                let config = scratch.appendingPathComponent("reachd.toml")
                try "[connectivity]\nuri = \"http://\(XLATNetwork.serverName)/\"\nresponse = \"reachd-xlat-ok\"\ntimeout = \"3s\"\n"
                    .write(to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(
                    in: ns[0], directory: scratch.appendingPathComponent("reachd"),
                    arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()

                // No CLAT: the DNS64 names the prefix; IPv4 servers are reached by name through the NAT64.
                #expect(
                    await eventually(.seconds(20)) {
                        Self.path(daemon).map { $0.nat64?.source == .dns64 && $0.connectivity == .full } == true
                    }, "\(daemon.log)")
                let nat64 = try #require(Self.path(daemon))
                #expect(nat64.nat64 == .init(prefix: XLATNetwork.prefix, source: .dns64, interface: "eth0"))
                #expect(nat64.status == .wired && !nat64.ipv4 && nat64.ipv6 && nat64.ipv4Via == .nat64 && nat64.vpn == nil)
                let status = try Self.reachctl(ns[0], daemon, "status")
                #expect(status.contains("ipv4:         no (IPv4 servers by name only, through NAT64)"), "\(status)")
                #expect(status.contains("nat64:        2001:db8:64::/96 (dns64, eth0)"), "\(status)")
                let route = try Self.reachctl(ns[0], daemon, "route", XLATNetwork.server)
                #expect(route.contains("status:       wired"), "\(route)")
                #expect(
                    route.contains(
                        "\(XLATNetwork.server) wired dev eth0 via 2001:db8:1::1 src 2001:db8:1::2 through NAT64 as 2001:db8:64::c000:250"),
                    "\(route)")
                let json = try Self.reachctl(ns[0], daemon, "status", "--json")
                #expect(
                    json.contains(
                        #""ipv4-via":"nat64","clat":null,"nat64":{"prefix":"2001:db8:64::/96","source":"dns64","interface":"eth0","lifetime":null}"#
                    ), "\(json)")

                // The CLAT: IPv4 of its own, through tayga on both sides; not a VPN.
                try network.startCLAT()
                #expect(
                    await eventually(.seconds(20)) {
                        Self.path(daemon).map { $0.clat?.name == "clat" && $0.connectivity == .full } == true
                    }, "\(daemon.log)")
                let clat = try #require(Self.path(daemon))
                #expect(clat.status == .wired && clat.interface?.name == "eth0" && clat.vpn == nil && clat.ipv4 && clat.ipv4Via == .clat)
                #expect(await eventually { daemon.log.contains("ipv4 200") }, "the IPv4 probe answered through the CLAT: \(daemon.log)")
                let withCLAT = try Self.reachctl(ns[0], daemon, "status")
                #expect(withCLAT.contains("ipv4:         yes (CLAT clat)") && !withCLAT.contains("vpn:"), "\(withCLAT)")

                // The CLAT's process gone: its tun loses carrier, IPv4 is by name only again.
                network.stopCLAT()
                #expect(await eventually { Self.path(daemon).map { $0.clat == nil && $0.ipv4Via == .nat64 } == true }, "\(daemon.log)")
            }
        }
    }

    @Test(
        "a DNS64 whose answer for ipv4only.arpa is no synthesis gives no prefix, and the log says why", .timeLimit(.minutes(2)),
        .needsRootForTayga)
    func dns64WithoutSynthesis() async throws {
        try await withScratch { scratch in
            try await withNamespaces("nosynth", "gateway", "internet") { ns in
                let network = try XLATNetwork(
                    host: ns[0], gateway: ns[1], internet: ns[2], directory: scratch, realIPv6ForWellKnownName: true)
                defer { network.stop() }
                let daemon = try DaemonProcess(in: ns[0], directory: scratch.appendingPathComponent("reachd"), arguments: ["--bus", "none"])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(
                    await eventually {
                        daemon.log.contains("nat64: no DNS64 prefix (RFC 7050): ipv4only.arpa has no synthesised address (2001:db8:99::1)")
                    },
                    "\(daemon.log)")
                let path = try #require(Self.path(daemon))
                #expect(path.nat64 == nil && path.ipv4Via == Path.IPv4Via.none && path.status == .wired)
            }
        }
    }

    @Test(
        "sleep and resume: PrepareForSleep(false) forgets connectivity and trust (unknown meanwhile), probes and re-validates at once; a network changed while asleep is seen",
        .timeLimit(.minutes(2)), .needsSystemBusName)
    func sleepAndResume() async throws {
        try await withScratch { scratch in
            let bus = try TestSystemBus(directory: scratch, standIns: ["org.freedesktop.login1"])
            defer { bus.stop() }
            try await withNamespaces("sleep", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let http = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "204")
                defer { http.stop() }
                try PinnedServer.makePKI(in: scratch)
                let tls = try await PinnedServer.serve(in: ns[1], from: scratch)
                defer { stopServer(tls) }
                let config = try PinnedServer.config(pins: try PinnedServer.pins(in: scratch), in: scratch)
                try (String(contentsOf: config, encoding: .utf8) + "\n[connectivity]\nuri = \"http://10.1.0.1/\"\ninterval = \"1h\"\n")
                    .write(to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(
                    in: ns[0], directory: scratch.appendingPathComponent("reachd"),
                    arguments: ["--bus", bus.address, "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(
                    await eventually(.seconds(20)) { Self.path(daemon).map { $0.connectivity == .full && $0.trust == .ok } == true },
                    "\(daemon.log)")
                let logind = try LogindStandIn(bus: bus.address)
                defer { logind.stop() }

                // Asleep, the laptop is carried into a hotel: same interface, same addresses, no kernel event.
                try logind.sleep()
                #expect(await eventually { daemon.log.contains("going to sleep") }, "\(daemon.log)")
                try http.set("redirect")
                let requests = http.requests
                try logind.resume()
                #expect(
                    await eventually { Self.path(daemon)?.connectivity == .portal },
                    "an interval of 1 h: only the resume probes: \(daemon.log)")
                #expect(http.requests > requests)
                let log = daemon.log
                let resumed = try #require(log.range(of: "resumed from sleep"))
                let after = log[resumed.upperBound...]
                let unknown = try #require(after.range(of: "connectivity: unknown"), "nothing stale meanwhile: \(log)")
                #expect(after[unknown.upperBound...].contains("connectivity: portal"), "\(log)")
                // The pins are judged again: unknown at once, then the new round's verdict (the pinned
                // server still validates: a portal lowers nothing that passes).
                let untrusted = try #require(after.range(of: "trust: unknown"), "\(log)")
                #expect(await eventually(.seconds(20)) { daemon.log[untrusted.upperBound...].contains("trust: ok") }, "\(daemon.log)")
            }
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// tayga makes its NAT64 device root's, a user that a test's own user namespace does not map.
    fileprivate static var needsRootForTayga: Self {
        needsRoot("tayga makes its NAT64 device root's, a user this test's user namespace does not map")
    }
}
