import EmbeddedKernel
import Foundation
import IPAddresses
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

    @Test("reachctl watch follows the daemon as soon as one answers; with --bus it never computes the path itself")
    func watchFollowsTheDaemon() async throws {
        try await withScratch { scratch in
            let runtime = scratch.appendingPathComponent("runtime")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            let socket = runtime.appendingPathComponent("bus").path
            // Where reachctl looks by default, pointed at the scratch directory (no system bus here). Until a
            // daemon answers, the automatic one computes the path itself, from this host's kernel (it only reads).
            let environment = ["RUNTIME_DIRECTORY": runtime.path, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"]
            let automatic = try ContainerHostTests.Recorder(
                "automatic", [ServedDaemon.reachctl, "watch", "--json"], in: scratch, environment: environment)
            defer { automatic.stop() }
            let explicit = try ContainerHostTests.Recorder(
                "explicit", [ServedDaemon.reachctl, "watch", "--json", "--bus", "unix:path=\(socket)"], in: scratch)
            defer { explicit.stop() }
            #expect(await eventually { automatic.lines.count == 1 }, "\(automatic.stderr)")
            #expect(automatic.lines.first.flatMap { try? Path(json: String($0)) }?.source == .direct)
            try await Task.sleep(for: .milliseconds(500))
            #expect(explicit.lines.isEmpty, "with --bus, nothing computed here: \(explicit.lines)")
            #expect(explicit.stderr.contains("waiting for it"), "\(explicit.stderr)")

            let kernel = EmbeddedKernel()
            kernel.addLoopback()
            kernel.addUplink(subnet: "10.1.0")
            let config = scratch.appendingPathComponent("reachd.toml").path
            try ServedDaemon.isolated("").write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try ServedDaemon(kernel: kernel, config: config, socket: socket)
            for watcher in [automatic, explicit] {
                #expect(
                    await eventually(.seconds(5)) {
                        watcher.lines.last.flatMap { try? Path(json: String($0)) }?.source == .daemon
                    }, "\(watcher.lines)")
            }
            #expect(automatic.stderr.contains("reachd answers now: following it"), "\(automatic.stderr)")
            // Following the daemon, not the kernel: a change reaches both through it.
            kernel.deleteRoute(Self.defaultRoute)
            for watcher in [automatic, explicit] {
                #expect(
                    await eventually {
                        let last = watcher.lines.last.flatMap { try? Path(json: String($0)) }
                        return last?.status == .unreachable && last?.source == .daemon
                    }, "\(watcher.lines.suffix(2))")
            }
            await daemon.stop()
        }
    }
}
