import Dispatch
import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import ReachabilityClient
import ReachabilityCompat
import Synchronization
import SystemCalls
import TestTraits
import Testing

/// The client's API beyond `paths` — WatchPath() restricted and per-destination
/// paths, status-only changes, wait(until:), the async calls, the trust stream —
/// and ReachabilityCompat backed by the daemon: reachd (`ServedDaemon`, as any user) on
/// a host with a wired uplink (eth0, metric 100) and one classified Wi-Fi by
/// `[monitor.kind]` (wlan0, metric 600).
@Suite("ReachabilityClient's API and ReachabilityCompat through reachd", .ownThreads)
struct ClientAPITests {
    static let eth0: Int32 = 2
    static let wlan0: Int32 = 3

    static func withDaemon(config extra: String = "", _ body: (ServedDaemon, ReachabilityClient) async throws -> Void) async throws {
        try await ServedDaemon.serving(config: "\(extra)\n[monitor.kind]\n\"wlan*\" = \"wifi\"\n") { kernel in
            kernel.addUplink("eth0", index: eth0, subnet: "10.1.0", metric: 100)
            kernel.addUplink("wlan0", index: wlan0, subnet: "10.2.0", metric: 600)
        } _: { daemon in
            let client = ReachabilityClient(endpoint: .address(daemon.address), reconnectDelays: (.milliseconds(10), .milliseconds(50)))
            try await body(daemon, client)
        }
    }

    static func address(_ text: String, on interface: Int32) -> InterfaceAddress {
        let parts = text.split(separator: "/")
        return InterfaceAddress(interfaceIndex: interface, address: IPAddress(String(parts[0]))!, prefixLength: UInt8(parts[1])!)
    }

    @Test("paths(interfaceTypes:) and paths(to:): the daemon's WatchPath follows a Wi-Fi-only path and one destination's route")
    func watchedPaths() async throws {
        try await Self.withDaemon { daemon, client in
            let wifi = Collected(client.paths(interfaceTypes: [.wifi]))
            let destination = Collected(client.paths(to: "10.9.9.9"))
            let noCellular = Collected(client.paths(interfaceTypes: [.wifi, .wired]))
            defer { [wifi, destination, noCellular].forEach { $0.cancel() } }
            #expect(await eventually { wifi.all.last?.interface?.name == "wlan0" && wifi.all.last?.status == .wifi })
            #expect(wifi.all.first?.initial == true)
            #expect(await eventually { destination.all.last?.interface?.name == "eth0" })
            #expect(destination.all.last?.destination == "10.9.9.9")
            #expect(await eventually { noCellular.all.last?.status == .wired })

            // A route for the destination alone: the default path does not move, the destination's does.
            daemon.kernel.addRoute(
                .init(IPAddress("10.9.9.0")!, prefixLength: 24, outputInterface: Self.wlan0, gateway: IPAddress("10.2.0.1")))
            #expect(await eventually { destination.all.last?.interface?.name == "wlan0" }, "\(destination.all.map { $0.jsonString() })")
            let unmoved = try await client.currentPath()
            #expect(unmoved.interface?.name == "eth0")

            daemon.kernel.setLink(Self.wlan0, up: false)
            #expect(await eventually { wifi.all.last?.status == .unreachable })
            #expect(await eventually { destination.all.last?.interface?.name == "eth0" })
            #expect(noCellular.all.last?.status == .wired, "wlan0 going was no change of the wired path: \(noCellular.all.count)")

            // busctl, as an integrator calls it; a bad interface type is refused.
            let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]
            let watched = try daemon.busctl(["call"] + object + ["WatchPath", "ss", "", "wired"]).output
            #expect(watched.contains("\\\"status\\\":\\\"wired\\\""), "\(watched)")
            let refused = try daemon.busctl(["call"] + object + ["WatchPath", "ss", "", "wifi,ethernet"], check: false)
            #expect(refused.status != 0 && refused.error.contains("\"ethernet\" is not an interface type"), "\(refused.error)")
        }
    }

    @Test("statusChanges is silent while addresses move; onChange runs on the client's own queue; wait(until:) meets and times out")
    func statusAndWait() async throws {
        try await Self.withDaemon { daemon, client in
            let statuses = Collected(client.statusChanges)
            let paths = Collected(client.paths)
            let called = Mutex<[ReachabilityStatus]>([])
            let subscription = client.onChange(of: \.status) { status in called.withLock { $0.append(status) } }
            defer { statuses.cancel(); paths.cancel(); subscription.cancel() }
            #expect(
                await eventually { statuses.all == [.wired] && called.withLock { $0 } == [.wired] },
                "statuses \(statuses.all), called \(called.withLock { $0 }), paths \(paths.all.map(\.status))")

            daemon.kernel.addAddress(Self.address("10.1.0.77/24", on: Self.eth0))
            #expect(await eventually { paths.all.count >= 2 }, "the document changed")
            let met = await client.wait(until: .wired, timeout: .seconds(5))
            #expect(met?.status == .wired, "met at once")
            #expect(await client.wait(until: .cellular, timeout: .milliseconds(300)) == nil, "timed out")
            #expect(await client.wait(until: .online, timeout: .milliseconds(300)) == nil, "no probe: connectivity is not full")

            async let released = client.wait(until: .wifi, timeout: .seconds(10))
            try await Task.sleep(for: .milliseconds(200))
            daemon.kernel.deleteRoute(.defaultRoute(via: IPAddress("10.1.0.1")!, interface: Self.eth0, metric: 100))
            #expect(await released?.interface?.name == "wlan0")
            #expect(await eventually { statuses.all == [.wired, .wifi] }, "\(statuses.all), paths \(paths.all.map(\.status))")
            #expect(await eventually { called.withLock { $0 } == [.wired, .wifi] }, "\(called.withLock { $0 })")
        }
    }

    @Test("paths holds only the latest path while its consumer does not read: 30 documents sent, the next read is the last")
    func pathsHoldTheLatest() async throws {
        try await Self.withDaemon { daemon, client in
            var idle = client.paths.makeAsyncIterator()
            #expect(await idle.next()?.status == .wired, "subscribed")
            // A reader that keeps up, to count what the daemon sent: on the same client, so that once it holds
            // the last path the idle stream was handed it too (another client's connection may be ahead of this one).
            let eager = Collected(client.paths)
            defer { eager.cancel() }
            #expect(await eventually { eager.all.count == 1 })
            func added(_ path: Path?) -> Int {
                path?.interfaces.first { $0.name == "wlan0" }?.addresses.filter { $0.hasPrefix("10.2.0.1") && $0 != "10.2.0.1/24" }.count
                    ?? -1
            }
            // 30 documents, each with one more address on wlan0, the next only once the eager reader
            // has the last (one at a time, not one coalesced batch, however loaded the machine).
            for host in 100..<130 {
                daemon.kernel.addAddress(Self.address("10.2.0.\(host)/24", on: Self.wlan0))
                #expect(await eventually { added(eager.all.last) == host - 99 }, "\(eager.all.count) documents")
            }
            #expect(eager.all.count >= 31, "the daemon sent \(eager.all.count) documents, one per address")
            // Both streams are handed each path in one pass on the client's thread: let that pass end.
            try await Task.sleep(for: .milliseconds(100))
            let next = await idle.next()
            #expect(
                added(next) == 30, "the idle consumer's next path is the latest (\(added(next)) of 30 addresses), not the oldest queued")
        }
    }

    @Test("the async calls answer as the blocking ones; trustChanges starts with the verdict (none without hosts)")
    func asyncCallsAndTrust() async throws {
        try await Self.withDaemon { _, client in
            let path = try await client.currentPath()
            let route = try await client.route(to: "10.2.0.1")
            let interfaces = try await client.interfaces()
            let trustStatus = try await client.trustStatus()
            #expect(path.status == .wired)
            #expect(route.interface?.name == "wlan0")
            #expect(interfaces.contains { $0.interface.name == "wlan0" && $0.interface.kind == .wifi })
            #expect(trustStatus.overall == TrustSummary.none)
            do {
                try await client.recheckTrust()
                Issue.record("RecheckTrust without trust hosts must fail")
            } catch {
                #expect("\(error)".contains("no trust hosts are configured"), "\(error)")
            }
            let trust = Collected(client.trustChanges)
            defer { trust.cancel() }
            #expect(await eventually { trust.all.first?.overall == TrustSummary.none })
        }
    }

    @Test("DNS through the daemon: the document, SupportsDNS and DNSServers, reachctl status, the metric; no usable resolver is limited")
    func dnsThroughTheDaemon() async throws {
        try await withScratch { files in
            let resolvConf = files.appendingPathComponent("resolv.conf")
            try "nameserver 10.1.0.53\nnameserver 10.2.0.53\n".write(to: resolvConf, atomically: true, encoding: .utf8)
            let config = "[monitor]\nresolv-conf = \"\(resolvConf.path)\"\n"
            try await Self.withDaemon(config: config) { daemon, client in
                let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]
                let path = try await client.currentPath()
                #expect(path.dns == Path.DNS(source: .resolvConf, servers: ["10.1.0.53", "10.2.0.53"], usable: ["10.1.0.53", "10.2.0.53"]))
                #expect(try daemon.busctl(["get-property"] + object + ["SupportsDNS"]).output == "b true\n")
                #expect(try daemon.busctl(["get-property"] + object + ["DNSServers"]).output == "as 2 \"10.1.0.53\" \"10.2.0.53\"\n")
                let status = try run([ServedDaemon.reachctl, "status", "--bus", daemon.socket]).output
                #expect(status.contains("dns:          10.1.0.53 10.2.0.53 (resolv.conf)\n"), "\(status)")
                #expect(await daemon.metric("reachd_dns_servers", ["source": "resolv.conf", "state": "usable"]) == 2)

                daemon.kernel.addRoute(.refusing(IPAddress("10.1.0.53")!, prefixLength: 32, type: RouteType.unreachable))
                daemon.kernel.addRoute(.refusing(IPAddress("10.2.0.53")!, prefixLength: 32, type: RouteType.unreachable))
                #expect(await eventually { (try? daemon.busctl(["get-property"] + object + ["SupportsDNS"]).output) == "b false\n" })
                let limited = try await client.currentPath()
                #expect(limited.status == .wired && limited.connectivity == .limited && limited.dns?.usable == [])
                #expect(await daemon.metric("reachd_dns_servers", ["source": "resolv.conf", "state": "usable"]) == 0)

                try replaceAtomically(resolvConf, with: "nameserver 10.1.0.1\n")
                #expect(
                    await eventually { (try? daemon.busctl(["get-property"] + object + ["DNSServers"]).output) == "as 1 \"10.1.0.1\"\n" })
                let restored = try await client.currentPath()
                #expect(restored.connectivity == .unknown && restored.supportsDNS == true)
            }
        }
    }

    @Test("ReachabilityCompat asks the daemon when one answers: the listener follows the daemon's path")
    func compatThroughTheDaemon() async throws {
        try await Self.withDaemon { daemon, _ in
            let manager = NetworkReachabilityManager(endpoint: .address(daemon.address))!
            let host = NetworkReachabilityManager(host: "10.2.0.1", endpoint: .address(daemon.address))!
            #expect(manager.status == .reachable(.ethernetOrWiFi))
            #expect(manager.backend == .daemon)
            let listened = Mutex<[NetworkReachabilityManager.NetworkReachabilityStatus]>([])
            let queue = DispatchQueue(label: "listener")
            #expect(manager.startListening(onQueue: queue) { status in listened.withLock { $0.append(status) } })
            #expect(host.startListening(onQueue: queue) { _ in })
            defer { manager.stopListening(); host.stopListening() }
            #expect(await eventually { listened.withLock { $0 } == [.reachable(.ethernetOrWiFi)] })
            daemon.kernel.setLink(Self.eth0, up: false)
            daemon.kernel.setLink(Self.wlan0, up: false)
            #expect(
                await eventually { listened.withLock { $0 } == [.reachable(.ethernetOrWiFi), .notReachable] }, "\(listened.withLock { $0 })"
            )
            #expect(await eventually { host.status == .notReachable })
        }
    }

    @Test("connectionStates says connected; wait(for: .online) without a probe gives up saying connectivity is unknown")
    func connectionAndWaitReasons() async throws {
        try await Self.withDaemon { daemon, client in
            let states = Collected(client.connectionStates)
            defer { states.cancel() }
            #expect(await eventually { states.all.last == .connected(to: daemon.address) }, "\(states.all)")
            #expect(client.connectionState == .connected(to: daemon.address))
            await #expect { try await client.wait(for: .online, timeout: .milliseconds(500)) } throws: { error in
                guard case let .connectivityUnknown(last)? = error as? ReachabilityClient.WaitFailure else { return false }
                return last.status == .wired
            }
            await #expect { try await client.wait(for: .cellular, timeout: .milliseconds(300)) } throws: { error in
                guard case let .timedOut(last)? = error as? ReachabilityClient.WaitFailure else { return false }
                return last.status == .wired
            }
            let met = try await client.wait(for: .reachable, timeout: .seconds(5))
            #expect(met.status == .wired)
        }
    }

    @Test("NWPathMonitor through the daemon: satisfied on wired, then on Wi-Fi when the wired link goes")
    func nwPathMonitorThroughTheDaemon() async throws {
        try await Self.withDaemon { daemon, _ in
            let monitor = NWPathMonitor(endpoint: .address(daemon.address))
            let paths = Mutex<[NWPath]>([])
            monitor.pathUpdateHandler = { path in paths.withLock { $0.append(path) } }
            monitor.start(queue: DispatchQueue(label: "nwpath"))
            defer { monitor.cancel() }
            #expect(await eventually { paths.withLock { $0.first?.usesInterfaceType(.wiredEthernet) == true } })
            #expect(monitor.backend == .daemon)
            daemon.kernel.setLink(Self.eth0, up: false)
            #expect(await eventually { paths.withLock { $0.last?.usesInterfaceType(.wifi) == true } })
            #expect(paths.withLock { $0.allSatisfy { $0.status == .satisfied } })
        }
    }

    @Test("one connection per client: its calls and every stream share it; a stream that ends lets go of what the daemon held for it")
    func oneConnectionPerClient() async throws {
        try await Self.withDaemon { daemon, client in
            func open() async -> Int { await daemon.held().connections }
            #expect(try await client.currentPath().status == .wired)
            #expect(await open() == 1)
            let paths = Collected(client.paths)
            let trust = Collected(client.trustChanges)
            let pins = Collected(client.pinFailures)
            let wifi = Collected(client.paths(interfaceTypes: [.wifi]))
            let interfaces = Mutex<[InterfaceChange]>([])
            let inventory = Task { for await change in client.interfaceChanges { interfaces.withLock { $0.append(change) } } }
            defer { paths.cancel(); trust.cancel(); pins.cancel(); wifi.cancel(); inventory.cancel() }
            #expect(await eventually { !paths.all.isEmpty && !trust.all.isEmpty && wifi.all.last?.status == .wifi })
            #expect(await eventually { interfaces.withLock { $0.count } >= 3 }, "lo, eth0, wlan0")
            _ = try client.blocking.interfaces()
            #expect(try await client.route(to: "10.9.9.9").interface?.name == "eth0")
            #expect(await open() == 1, "calls and six streams on one connection")
            #expect(await daemon.held() == .init(connections: 1, watches: ["|wifi"], interfaces: true))

            wifi.cancel()
            inventory.cancel()
            #expect(
                await eventually { await daemon.held() == .init(connections: 1, watches: [], interfaces: false) },
                "UnwatchPath() and UnwatchInterfaces() sent when the streams ended")
            // Watches come and go on the one connection: more of them, one after another, than it may hold at once.
            for host in 1...(10) {
                let one = Collected(client.paths(to: "10.9.9.\(host)"))
                #expect(await eventually { one.all.last?.destination == "10.9.9.\(host)" }, "watch \(host)")
                one.cancel()
            }
            daemon.kernel.setLink(Self.eth0, up: false)
            #expect(await eventually { paths.all.last?.status == .wifi })
            #expect(await open() == 1)

            // A client let go closes its connection.
            do {
                let other = ReachabilityClient(endpoint: .address(daemon.address))
                #expect(try await other.currentPath().status == .wifi)
                #expect(await open() == 2)
            }
            #expect(await eventually { await open() == 1 }, "the released client's connection closed")
        }
    }
}
