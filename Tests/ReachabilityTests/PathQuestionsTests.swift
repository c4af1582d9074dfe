import Foundation
import NamespaceTesting
import Reachability
import Synchronization
import TestTraits
import Testing

/// NWPath's questions and NWPathMonitor's restrictions, against the kernel: a
/// namespace with a wired uplink (eth0, metric 100) and one classified Wi-Fi by
/// `[monitor.kind]` (wlan0, metric 600), each with a default route.
@Suite("NWPath's questions: interface-type restrictions, uses(), gateways, preference order, status-only changes", .needsRoot, .ownThreads)
struct PathQuestionsTests {
    static func twoUplinks(_ body: ([TestNamespace], MonitorOptions) async throws -> Void) async throws {
        try await withNamespaces("nwpath", "wired", "wifi") { ns in
            try ns[0].addUplink("eth0", subnet: "10.1.0", router: ns[1], defaultRoute: false)
            try ns[0].addUplink("wlan0", subnet: "10.2.0", router: ns[2], defaultRoute: false)
            try ns[0].ip("route add default via 10.1.0.1 dev eth0 metric 100")
            try ns[0].ip("route add default via 10.2.0.1 dev wlan0 metric 600")
            let options = try MonitorOptions(kindOverrides: [("wlan*", .wifi)], networkNamespace: ns[0].path)
            try await body(ns, options)
        }
    }

    @Test("the default path is wired; restricted to Wi-Fi, or with wired prohibited, it is wlan0's; to cellular, there is none")
    func restrictions() async throws {
        try await Self.twoUplinks { ns, options in
            let path = try ReachabilityMonitor.path(options: options)
            #expect(path.status == .wired && path.interface?.name == "eth0")
            #expect(path.uses(.wired) && !path.uses(.wifi) && !path.usesVPN)
            #expect(path.gateways == ["10.1.0.1"])
            #expect(path.availableInterfaces.map(\.name) == ["eth0", "wlan0"])

            for allowed: Set<InterfaceType> in [[.wifi], [.wifi, .cellular]] {
                let wifi = try ReachabilityMonitor.path(options: options, allowedInterfaceTypes: allowed)
                #expect(wifi.status == .wifi && wifi.interface?.name == "wlan0" && wifi.gateway == "10.2.0.1", "\(wifi.jsonString())")
                #expect(wifi.uses(.wifi) && wifi.gateways == ["10.2.0.1"])
                #expect(wifi.routes.first?.interface == "wlan0")
            }
            let cellular = try ReachabilityMonitor.path(options: options, allowedInterfaceTypes: [.cellular])
            #expect(cellular.status == .unreachable && cellular.reason == .noInterface, "\(cellular.jsonString())")

            // A Wi-Fi that is up and addressed but has no route out: no-route, not no-interface.
            try ns[0].ip("route del default via 10.2.0.1 dev wlan0")
            let noRoute = try ReachabilityMonitor.path(options: options, allowedInterfaceTypes: [.wifi])
            #expect(noRoute.status == .unreachable && noRoute.reason == .noRoute, "\(noRoute.jsonString())")
            #expect(try ReachabilityMonitor.path(options: options).status == .wired, "the unrestricted path is unchanged")
        }
    }

    @Test("a running monitor restricted with prohibitedInterfaceTypes follows the Wi-Fi and ignores the wired link")
    func runningRestrictedMonitor() async throws {
        try await Self.twoUplinks { ns, options in
            let monitor = ReachabilityMonitor(prohibitedInterfaceTypes: [.wired], options: options)
            try monitor.start()
            defer { monitor.stop() }
            #expect(monitor.currentPath?.interface?.name == "wlan0")
            try ns[0].ip("link set dev wlan0 down")
            try await waitForPath(monitor, "no Wi-Fi path") { $0.status == .unreachable }
            try ns[0].ip("link set dev wlan0 up")
            try ns[0].ip("route add default via 10.2.0.1 dev wlan0 metric 600")
            try await waitForPath(monitor, "the Wi-Fi path back") { $0.status == .wifi && $0.interface?.name == "wlan0" }
            // The wired link going away changes nothing for this monitor.
            try ns[0].ip("link set dev eth0 down")
            try await Task.sleep(for: .milliseconds(200))
            #expect(monitor.currentPath?.status == .wifi)
        }
    }

    @Test("changes(of: \\.status) and statusChanges are silent while only addresses move; paths is not")
    func statusOnlyStreams() async throws {
        try await Self.twoUplinks { ns, options in
            let monitor = ReachabilityMonitor(options: options)
            try monitor.start()
            defer { monitor.stop() }
            var statuses = monitor.statusChanges.makeAsyncIterator()
            var interfaces = monitor.changes(of: \.interface?.name).makeAsyncIterator()
            var paths = monitor.paths.makeAsyncIterator()
            let received = Mutex<[ReachabilityStatus]>([])
            let subscription = monitor.onChange(of: \.status) { status in received.withLock { $0.append(status) } }
            defer { subscription.cancel() }
            #expect(await statuses.next() == .wired)
            #expect(await interfaces.next() == "eth0")
            #expect(await paths.next()?.initial == true)

            try ns[0].ip("addr add 10.1.0.77/24 dev eth0")
            let moved = await paths.next()
            #expect(moved?.interfaces.first { $0.name == "eth0" }?.addresses.contains("10.1.0.77/24") == true)
            try ns[0].ip("route del default via 10.1.0.1 dev eth0")
            // The first status after .wired is the change of link, not the address.
            #expect(await statuses.next() == .wifi)
            #expect(await interfaces.next() == "wlan0")
            #expect(await eventually { received.withLock { $0 } == [.wired, .wifi] }, "the callback ran on its own queue, without a main queue")
        }
    }
}
