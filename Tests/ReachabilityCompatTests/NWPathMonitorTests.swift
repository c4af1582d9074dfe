import Dispatch
import EmbeddedKernel
import IPAddresses
import Netlink
import ReachabilityClient
import ReachabilityCompat
import Synchronization
import SystemCalls
import TestTraits
import Testing

/// NWPathMonitor's semantics, in process, on an embedded kernel (`Tests/EmbeddedKernel`; through the
/// daemon on a real kernel: ReachdTests' ClientAPITests).
@Suite("ReachabilityCompat: NWPathMonitor, in process", .serialized, .ownThreads)
struct NWPathMonitorTests {
    /// Every path a handler was given, in order.
    final class Updates: Sendable {
        private let paths = Mutex<[NWPath]>([])
        var all: [NWPath] { paths.withLock { $0 } }
        func record(_ path: NWPath) { paths.withLock { $0.append(path) } }

        func wait(for count: Int) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, all.count < count { try? await Task.sleep(for: .milliseconds(10)) }
            return all.count >= count
        }
    }

    let queue = DispatchQueue(label: "paths")

    @Test("start calls the handler with the path, then on a change it shows — not an address; cancel ends it for good")
    func handler() async throws {
        let kernel = EmbeddedKernel()
        kernel.addUplink()
        let monitor = NWPathMonitor(endpoint: nil, options: kernel.options())
        let updates = Updates()
        monitor.pathUpdateHandler = { updates.record($0) }
        monitor.start(queue: queue)
        #expect(await updates.wait(for: 1))
        #expect(updates.all.first?.status == .satisfied)
        #expect(updates.all.first?.usesInterfaceType(.wiredEthernet) == true)
        #expect(monitor.currentPath.status == .satisfied && monitor.backend == .inProcess && monitor.queue === queue)
        kernel.addAddress(InterfaceAddress(interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("192.0.2.77")!, prefixLength: 24))
        try await Task.sleep(for: .milliseconds(300))
        #expect(updates.all.count == 1, "an address is no change of an NWPath")
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        #expect(await updates.wait(for: 2))
        #expect(updates.all.map(\.status) == [.satisfied, .unsatisfied])
        monitor.cancel()
        kernel.addRoute(EmbeddedKernel.uplinkRoute4)
        try await Task.sleep(for: .milliseconds(300))
        #expect(updates.all.count == 2, "a cancelled monitor is silent")
        monitor.start(queue: queue)
        try await Task.sleep(for: .milliseconds(300))
        #expect(updates.all.count == 2, "and cannot be started again")
    }

    @Test("requiredInterfaceType: .wifi on a wired host is unsatisfied; prohibiting cellular leaves it satisfied")
    func restricted() async throws {
        let kernel = EmbeddedKernel()
        kernel.addUplink()
        let options = kernel.options()
        for (types, expected) in [(Set([InterfaceType.wifi]), NWPath.Status.unsatisfied), ([.wifi, .wired], .satisfied)] {
            let monitor = NWPathMonitor(interfaceTypes: types, endpoint: nil, options: options)
            let updates = Updates()
            monitor.pathUpdateHandler = { updates.record($0) }
            monitor.start(queue: queue)
            #expect(await updates.wait(for: 1))
            #expect(updates.all.first?.status == expected)
            monitor.cancel()
        }
    }
}
