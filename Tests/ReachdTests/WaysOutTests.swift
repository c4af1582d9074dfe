import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

/// Every way out judged (docs/connectivity.md, "Every way out"): two uplinks, the
/// kernel's preferred one behind a portal, the other full.
@Suite("Every way out judged: two uplinks, a portal and a full one", .needsNamespaces, .ownThreads)
struct WaysOutTests {
    static func path(_ daemon: DaemonProcess) -> Path? {
        try? ReachabilityClient(endpoint: .address(daemon.address)).blocking.currentPath()
    }

    static func verdict(_ path: Path?, _ name: String) -> Connectivity? {
        guard let path, let entry = path.interfaces.first(where: { $0.name == name }) else { return nil }
        return path.connectivity(of: entry)
    }

    @Test("each interface's own verdict, the order, the better way out; a flap of either", .timeLimit(.minutes(3)))
    func twoUplinks() async throws {
        try await withScratch { scratch in
            try await withNamespaces("waysout", "routerA", "routerB") { ns in
                let (host, portal, open) = (ns[0], ns[1], ns[2])
                try host.addUplink(router: portal)
                try host.addUplink("eth1", subnet: "10.2.0", router: open, defaultRoute: false)
                try host.ip("route add default via 10.2.0.1 dev eth1 metric 200")
                // The same probe address behind each router: what each way out finds is its own network's answer.
                for router in [portal, open] { try router.ip("addr add 192.0.2.80/32 dev lo") }
                let hotel = try await HTTPProbeServer(
                    in: portal, address: "192.0.2.80", directory: try Self.directory(scratch, "a"), mode: "redirect")
                defer { hotel.stop() }
                let office = try await HTTPProbeServer(
                    in: open, address: "192.0.2.80", directory: try Self.directory(scratch, "b"), mode: "204")
                defer { office.stop() }
                let config = scratch.appendingPathComponent("reachd.toml")
                try "[connectivity]\nuri = \"http://192.0.2.80/\"\ninterval = \"10s\"\ntimeout = \"1s\"\n".write(
                    to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(
                    in: host, directory: scratch.appendingPathComponent("reachd"),
                    arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()

                #expect(await eventually(.seconds(20)) { Self.path(daemon)?.betterWayOut == "eth1" }, "\(daemon.log)")
                let both = try #require(Self.path(daemon))
                #expect(both.interface?.name == "eth0" && both.connectivity == .portal)
                #expect(Self.verdict(both, "eth0") == .portal && Self.verdict(both, "eth1") == .full)
                #expect(
                    both.interfaces.first { $0.name == "eth0" }?.connectivity == nil, "the path's own verdict is the path's connectivity")
                #expect(both.availableInterfaces.map(\.name) == ["eth1", "eth0"], "by verdict, then the kernel's preference")
                let status = try host.exec([DaemonProcess.reachctl, "status", "--bus", daemon.socket]).output
                #expect(status.contains("ways out:     eth1 full, eth0 portal") && status.contains("better:       eth1"), "\(status)")
                #expect(
                    try host.exec([DaemonProcess.reachctl, "status", "--json", "--bus", daemon.socket]).output
                        .contains(#""better-way-out":"eth1""#))
                // A destination's path is judged as the path is: by the way out it leaves by.
                let viaOffice = try host.exec([DaemonProcess.reachctl, "route", "10.2.0.1", "--json", "--bus", daemon.socket]).output
                #expect(viaOffice.contains(#""interface":"eth1""#) && viaOffice.contains(#""connectivity":"full""#), "\(viaOffice)")
                let beyondHotel = try host.exec([DaemonProcess.reachctl, "route", "198.51.100.1", "--json", "--bus", daemon.socket]).output
                #expect(beyondHotel.contains(#""connectivity":"portal""#), "leaves as the path does: \(beyondHotel)")

                // The full one loses carrier: it is no way out any more, and nothing is better.
                try open.ip("link set dev up0 down")
                #expect(
                    await eventually {
                        Self.path(daemon).map { $0.betterWayOut == nil && !$0.interfaces.contains { $0.name == "eth1" } } == true
                    },
                    "\(daemon.log)")
                // Back: judged again (no sooner than an interval after its last probe).
                try open.ip("link set dev up0 up")
                #expect(await eventually(.seconds(30)) { Self.path(daemon)?.betterWayOut == "eth1" }, "\(daemon.log)")

                // The portal's link goes: the kernel's way out is eth1, judged by the path's own probe.
                try host.ip("link set dev eth0 down")
                #expect(
                    await eventually(.seconds(20)) {
                        Self.path(daemon).map { $0.interface?.name == "eth1" && $0.connectivity == .full && $0.betterWayOut == nil } == true
                    }, "\(daemon.log)")
                #expect(Self.verdict(Self.path(daemon), "eth1") == .full)
            }
        }
    }

    static func directory(_ scratch: URL, _ name: String) throws -> URL {
        let directory = scratch.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}
