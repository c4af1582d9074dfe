import Foundation
import NamespaceTesting
import Reachability
import TestTraits
import Testing

/// The in-process monitor's connectivity probe (opt-in): the same probe and schedule
/// as reachd, sent from inside the watched namespace, against a real HTTP server
/// in the router's.
@Suite("In-process connectivity", .serialized, .needsNamespaces, .ownThreads)
struct MonitorConnectivityTests {
    static func withProbeServer(
        _ label: String, mode: String,
        _ body: ([TestNamespace], HTTPProbeServer) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-test-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withNamespaces(label, "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let server = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: directory, mode: mode)
            defer { server.stop() }
            try await body(ns, server)
        }
    }

    @Test(
        "portal with its login page, full once the probe answers 204, none without a route and probed again at once when it is back; one delivery per change",
        .timeLimit(.minutes(2)))
    func portalFullNone() async throws {
        try await Self.withProbeServer("mconn", mode: "redirect") { ns, server in
            let connectivity = ConnectivityOptions(uri: .init("http://10.1.0.1/generate_204"), interval: .seconds(10), timeout: .seconds(1))
            let monitor = ReachabilityMonitor(options: try options(ns[0]), connectivity: connectivity)
            let received = Recorder()
            monitor.onChange = { received.record($0) }
            try monitor.start()
            defer { monitor.stop() }

            let portal = try await waitForPath(monitor, "portal") { $0.connectivity == .portal }
            #expect(portal.status == .wired && portal.portal == "http://10.1.0.1/login?from=probe")

            // Not full: probed again 1 s, 2 s, 4 s … later.
            try server.set("204")
            let full = try await waitForPath(monitor, "full", timeout: .seconds(15)) { $0.connectivity == .full }
            #expect(full.portal == nil)

            // A stable full path: one probe per interval (10 s), nothing in between.
            let before = server.requests
            try await Task.sleep(for: .seconds(12))
            #expect((0...2).contains(server.requests - before), "\(server.requests - before) probes in 12 s with interval 10s")

            try ns[0].ip("route del default")
            try await waitForPath(monitor, "none") { $0.status == .unreachable && $0.connectivity == .none }
            let requestsWhileDown = server.requests
            try ns[0].ip("route add default via 10.1.0.1 dev eth0")
            // Probed on the change, not on the 10 s timer.
            try await waitForPath(monitor, "full again", timeout: .seconds(5)) { $0.status == .wired && $0.connectivity == .full }
            #expect(server.requests > requestsWhileDown)
            #expect(monitor.statistics.probes >= 3)

            try await Task.sleep(for: .milliseconds(200))
            let paths = received.paths
            #expect(paths.first?.initial == true)
            for (earlier, later) in zip(paths, paths.dropFirst()) {
                #expect(!earlier.isSamePath(as: later), "the same document delivered twice: \(later.jsonString())")
            }
            let states = paths.map(\.connectivity)
            #expect(states.contains(.portal) && states.contains(.full) && states.contains(.none))
        }
    }

    @Test(
        "limited when the server never answers; without a uri nothing is contacted and connectivity stays unknown",
        .timeLimit(.minutes(1)))
    func limitedAndOff() async throws {
        try await Self.withProbeServer("mlimit", mode: "silent") { ns, server in
            let quiet = ReachabilityMonitor(options: try options(ns[0]))
            try quiet.start()
            try await Task.sleep(for: .seconds(2))
            #expect(quiet.currentPath?.status == .wired && quiet.currentPath?.connectivity == .unknown)
            #expect(server.requests == 0 && quiet.statistics.probes == 0)
            quiet.stop()

            let connectivity = ConnectivityOptions(uri: .init("http://10.1.0.1/"), timeout: .milliseconds(500))
            let monitor = ReachabilityMonitor(options: try options(ns[0]), connectivity: connectivity)
            try monitor.start()
            defer { monitor.stop() }
            try await waitForPath(monitor, "limited") { $0.connectivity == .limited }
            #expect(server.requests >= 1)
        }
    }
}
