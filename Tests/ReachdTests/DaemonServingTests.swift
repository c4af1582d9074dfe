import EmbeddedKernel
import Foundation
import NamespaceTesting
import Netlink
import ReachabilityClient
import SystemCalls
import TestTraits
import Testing

/// What the daemon serves on its private socket — properties, Route(), and reachctl's
/// commands through it — as the kernel moves: reachd (`ServedDaemon`, as any user) with a
/// wired uplink (eth0, 10.1.0.2/24, default via 10.1.0.1).
@Suite("reachd serving its private socket (embedded kernel)", .ownThreads)
struct DaemonServingTests {
    static let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]
    static let defaultRoute = EmbeddedKernel.Route.defaultRoute(via: IPAddress("10.1.0.1")!, interface: EmbeddedKernel.uplink)

    static func withDaemon(_ body: (ServedDaemon) async throws -> Void) async throws {
        try await ServedDaemon.serving({ $0.addUplink(subnet: "10.1.0") }, body)
    }

    static func property(_ daemon: ServedDaemon, _ name: String) throws -> String {
        try daemon.busctl(["get-property"] + object + [name]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("properties follow route deletion and addition, read with busctl and with ReachabilityClient")
    func propertiesFollowRoutes() async throws {
        try await Self.withDaemon { daemon in
            #expect(try Self.property(daemon, "Status") == "s \"wired\"")
            #expect(try Self.property(daemon, "Interface") == "s \"eth0\"")
            let client = ReachabilityClient(endpoint: .address(daemon.address))
            #expect(try await client.currentPath().source == .daemon)

            daemon.kernel.deleteRoute(Self.defaultRoute)
            #expect(try await eventually { try Self.property(daemon, "Status") == "s \"unreachable\"" })
            #expect(try Self.property(daemon, "Reason") == "s \"no-route\"")
            #expect(try await client.currentPath().reason == .noRoute)
            daemon.kernel.addRoute(Self.defaultRoute)
            #expect(try await eventually { try Self.property(daemon, "Status") == "s \"wired\"" })

            let route = try daemon.busctl(["call"] + Self.object + ["Route", "s", "10.1.0.1"]).output
            #expect(route.contains("\\\"destination\\\":\\\"10.1.0.1\\\""), "\(route)")
        }
    }

    @Test("reachctl status, route and wait go through the daemon; wait exits 0 when met, 1 on timeout")
    func reachctlThroughTheDaemon() async throws {
        try await Self.withDaemon { daemon in
            let ctl = ServedDaemon.reachctl
            #expect(try run([ctl, "status", "--bus", daemon.socket]).output.contains("source:       daemon"))
            #expect(try run([ctl, "route", "10.1.0.1", "--bus", daemon.socket, "--json"]).output.contains("\"source\":\"daemon\""))

            let met = try run([ctl, "wait", "--bus", daemon.socket, "--timeout", "5s"])
            #expect(met.status == 0, "already reachable: at once")
            let timedOut = try run([ctl, "wait", "--for", "unreachable", "--bus", daemon.socket, "--timeout", "300ms"], check: false)
            #expect(timedOut.status == 1)
            #expect(timedOut.error == "reachctl: waiting for unreachable: timed out after 300ms\n")

            // A waiter that is released by a change.
            let waiter = Process()
            waiter.executableURL = URL(fileURLWithPath: ctl)
            waiter.arguments = ["wait", "--for", "unreachable", "--bus", daemon.socket, "--timeout", "20s"]
            try waiter.run()
            try await Task.sleep(for: .milliseconds(300))
            #expect(waiter.isRunning)
            daemon.kernel.deleteRoute(Self.defaultRoute)
            #expect(await eventually { !waiter.isRunning })
            #expect(waiter.terminationStatus == 0)
        }
    }

    @Test("reachctl watch --json prints the daemon's documents as it wrote them, the first marked initial, on one connection")
    func watchPassesDocumentsThrough() async throws {
        try await Self.withDaemon { daemon in
            try await withScratch { scratch in
                let watch = try ContainerHostTests.Recorder(
                    "watch", [ServedDaemon.reachctl, "watch", "--json", "--bus", daemon.socket], in: scratch)
                defer { watch.stop() }
                #expect(await eventually { watch.lines.count == 1 }, "\(watch.stderr)")
                let first = await daemon.onLoop { $0.describe() }
                #expect(first.contains("\"initial\":false,"))
                #expect(watch.lines.first.map(String.init) == first.replacing("\"initial\":false,", with: "\"initial\":true,"))
                #expect(await daemon.held().connections == 1, "asking whether a daemon answers and following it: one connection")

                daemon.kernel.deleteRoute(Self.defaultRoute)
                #expect(await eventually { watch.lines.count == 2 })
                #expect(watch.lines.last.map(String.init) == (await daemon.onLoop { $0.describe() }), "the daemon's bytes")
            }
        }
    }
}
