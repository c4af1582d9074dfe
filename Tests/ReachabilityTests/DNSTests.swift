import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import Reachability
import SystemCalls
import TestTraits
import Testing

@testable import ReachabilityCore

/// A scratch directory for resolv.conf files, removed afterwards.
func withResolvConfDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-dns-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

@Suite("DNS: resolv.conf read as glibc reads it, resolved's stub followed to its own list")
struct DNSServersTests {
    @Test("nameserver lines in order, zones kept, other lines, bad addresses and empty zones skipped (the fuzzer's find)")
    func parse() {
        let servers = DNSServers.parseResolvConf(
            """
            # a comment
            search example.com
            nameserver 192.0.2.53
            nameserver\t2001:db8::53
            nameserver fe80::1%eth0
            nameserver fe80::2%3
            nameserver fe80::3%
            nameserver not-an-address
            options edns0
            """)
        #expect(servers.map(\.address.description) == ["192.0.2.53", "2001:db8::53", "fe80::1", "fe80::2"])
        #expect(servers.map(\.link) == [nil, nil, .name("eth0"), .index(3)])
    }

    @Test("a resolv.conf naming only resolved's stub gives resolved's own list; a missing file gives none")
    func stub() async throws {
        try await withResolvConfDirectory { directory in
            let file = directory.appendingPathComponent("resolv.conf")
            let uplink = directory.appendingPathComponent("uplink.conf")
            try "nameserver 127.0.0.53\noptions edns0 trust-ad\n".write(to: file, atomically: true, encoding: .utf8)
            #expect(
                DNSServers.read(resolvConf: file.path, resolvedUplink: uplink.path).servers.map(\.address.description) == ["127.0.0.53"],
                "without resolved's list, the stub itself (a local resolver)")
            try "nameserver 10.1.0.53\nnameserver 10.2.0.53\n".write(to: uplink, atomically: true, encoding: .utf8)
            let resolved = DNSServers.read(resolvConf: file.path, resolvedUplink: uplink.path)
            #expect(resolved.source == .resolved && resolved.servers.map(\.address.description) == ["10.1.0.53", "10.2.0.53"])
            #expect(DNSServers.read(resolvConf: directory.appendingPathComponent("none").path) == .none)
        }
    }
}

/// The path's `dns`: which configured servers the path can reach, followed as
/// resolv.conf is replaced and as routes change (on an embedded kernel, `Tests/EmbeddedKernel`).
@Suite("DNS: the resolvers a path can use, followed (resolv.conf replaced atomically)", .serialized, .ownThreads)
struct PathDNSTests {
    @Test("a server the path routes to is usable; one behind an unreachable route is not, and without a probe connectivity is limited")
    func usableAndLimited() async throws {
        try await withResolvConfDirectory { directory in
            let file = directory.appendingPathComponent("resolv.conf")
            try "nameserver 10.1.0.53\n".write(to: file, atomically: true, encoding: .utf8)
            let kernel = EmbeddedKernel()
            kernel.addUplink(subnet: "10.1.0")
            let unreachable = EmbeddedKernel.Route.refusing(IPAddress("192.0.2.53")!, prefixLength: 32, type: RouteType.unreachable)
            kernel.addRoute(unreachable)
            var options = kernel.options()
            options.resolvConf = file.path
            let monitor = ReachabilityMonitor(options: options)
            try monitor.start()
            defer { monitor.stop() }
            let first = try #require(monitor.currentPath)
            #expect(first.dns == Path.DNS(source: .resolvConf, servers: ["10.1.0.53"], usable: ["10.1.0.53"]))
            #expect(first.supportsDNS == true && first.connectivity == .unknown)

            try replaceAtomically(file, with: "nameserver 192.0.2.53\n")
            let limited = try await waitForPath(monitor, "the server behind the unreachable route") { $0.dns?.servers == ["192.0.2.53"] }
            #expect(limited.dns?.usable == [] && limited.supportsDNS == false)
            #expect(limited.connectivity == .limited && limited.status == .wired, "a path, but no resolver: limited")

            // A route event for the server's address alone is enough.
            kernel.deleteRoute(unreachable)
            let back = try await waitForPath(monitor, "the server reachable again") { $0.supportsDNS == true }
            #expect(back.connectivity == .unknown)

            // A per-link (link-local) server is usable through its link only while it can carry traffic.
            try replaceAtomically(file, with: "nameserver fe80::1%eth0\n")
            try await waitForPath(monitor, "the link-local server") { $0.dns?.usable == ["fe80::1%eth0"] }
            kernel.setLink(EmbeddedKernel.uplink, carrier: false) // the peer went down
            try await waitForPath(monitor, "eth0 without carrier") { $0.dns?.usable == [] && $0.dns?.servers == ["fe80::1%eth0"] }
        }
    }

    @Test("a resolv.conf that is a symlink: re-pointing it, and replacing its target, are both followed")
    func symlink() async throws {
        try await withResolvConfDirectory { directory in
            let link = directory.appendingPathComponent("resolv.conf")
            let targets = directory.appendingPathComponent("run")
            try FileManager.default.createDirectory(at: targets, withIntermediateDirectories: true)
            let first = targets.appendingPathComponent("first.conf")
            let second = targets.appendingPathComponent("second.conf")
            try "nameserver 10.1.0.53\n".write(to: first, atomically: true, encoding: .utf8)
            try "nameserver 10.1.0.54\n".write(to: second, atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: first.path)
            let kernel = EmbeddedKernel()
            kernel.addUplink(subnet: "10.1.0")
            var options = kernel.options()
            options.resolvConf = link.path
            let monitor = ReachabilityMonitor(options: options)
            try monitor.start()
            defer { monitor.stop() }
            #expect(monitor.currentPath?.dns?.servers == ["10.1.0.53"])
            try replaceAtomically(first, with: "nameserver 10.1.0.55\n")
            try await waitForPath(monitor, "the target replaced") { $0.dns?.servers == ["10.1.0.55"] }
            // Re-pointed as `ln -sf` does it: a new link renamed over the old one.
            let fresh = directory.appendingPathComponent(".resolv.conf.new")
            try FileManager.default.createSymbolicLink(atPath: fresh.path, withDestinationPath: second.path)
            #expect(rename(fresh.path, link.path) == 0)
            try await waitForPath(monitor, "the link re-pointed") { $0.dns?.servers == ["10.1.0.54"] }
            // Its new target is followed too.
            try replaceAtomically(second, with: "nameserver 10.1.0.56\n")
            try await waitForPath(monitor, "the new target replaced") { $0.dns?.servers == ["10.1.0.56"] }
            try FileManager.default.removeItem(at: link)
            try await waitForPath(monitor, "no resolv.conf") { $0.dns == Path.DNS(source: .none, servers: [], usable: []) }
        }
    }
}
