import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import Reachability
import Synchronization
import SystemCalls
import TestTraits
import Testing

/// NWPath's questions and NWPathMonitor's restrictions, on an embedded kernel
/// (`Tests/EmbeddedKernel`): a wired uplink (eth0, metric 100) and one classified
/// Wi-Fi by `[monitor.kind]` (wlan0, metric 600), each with a default route.
@Suite("NWPath's questions: interface-type restrictions, uses(), gateways, preference order, status-only changes", .ownThreads)
struct PathQuestionsTests {
    static let wired = EmbeddedKernel.Route.defaultRoute(via: IPAddress("10.1.0.1")!, interface: 2, metric: 100)
    static let wifi = EmbeddedKernel.Route.defaultRoute(via: IPAddress("10.2.0.1")!, interface: 3, metric: 600)

    static func twoUplinks(_ body: (EmbeddedKernel, MonitorOptions) async throws -> Void) async throws {
        let kernel = EmbeddedKernel()
        kernel.addUplink("eth0", index: 2, subnet: "10.1.0", metric: 100)
        kernel.addUplink("wlan0", index: 3, subnet: "10.2.0", metric: 600)
        var options = kernel.options()
        options.kindOverrides = [("wlan*", .wifi)]
        try await body(kernel, options)
    }

    @Test("the default path is wired; restricted to Wi-Fi, or with wired prohibited, it is wlan0's; to cellular, there is none")
    func restrictions() async throws {
        try await Self.twoUplinks { kernel, options in
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
            kernel.deleteRoute(Self.wifi)
            let noRoute = try ReachabilityMonitor.path(options: options, allowedInterfaceTypes: [.wifi])
            #expect(noRoute.status == .unreachable && noRoute.reason == .noRoute, "\(noRoute.jsonString())")
            #expect(try ReachabilityMonitor.path(options: options).status == .wired, "the unrestricted path is unchanged")
        }
    }

    @Test("a running monitor restricted with prohibitedInterfaceTypes follows the Wi-Fi and ignores the wired link")
    func runningRestrictedMonitor() async throws {
        try await Self.twoUplinks { kernel, options in
            let monitor = ReachabilityMonitor(prohibitedInterfaceTypes: [.wired], options: options)
            try monitor.start()
            defer { monitor.stop() }
            #expect(monitor.currentPath?.interface?.name == "wlan0")
            kernel.setLink(3, up: false)
            try await waitForPath(monitor, "no Wi-Fi path") { $0.status == .unreachable }
            kernel.setLink(3, up: true, carrier: true)
            kernel.addRoute(Self.wifi)
            try await waitForPath(monitor, "the Wi-Fi path back") { $0.status == .wifi && $0.interface?.name == "wlan0" }
            // The wired link going away changes nothing for this monitor.
            kernel.setLink(2, up: false)
            try await Task.sleep(for: .milliseconds(200))
            #expect(monitor.currentPath?.status == .wifi)
        }
    }

    @Test("changes(of: \\.status) and statusChanges are silent while only addresses move; paths is not")
    func statusOnlyStreams() async throws {
        try await Self.twoUplinks { kernel, options in
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

            kernel.addAddress(InterfaceAddress(interfaceIndex: 2, address: IPAddress("10.1.0.77")!, prefixLength: 24))
            let moved = await paths.next()
            #expect(moved?.interfaces.first { $0.name == "eth0" }?.addresses.contains("10.1.0.77/24") == true)
            kernel.deleteRoute(Self.wired)
            // The first status after .wired is the change of link, not the address.
            #expect(await statuses.next() == .wifi)
            #expect(await interfaces.next() == "wlan0")
            #expect(
                await eventually { received.withLock { $0 } == [.wired, .wifi] }, "the callback ran on its own queue, without a main queue")
        }
    }
}
