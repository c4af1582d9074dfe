import Dispatch
import EmbeddedKernel
import Foundation
import IPAddresses
import Netlink
import ReachabilityClient
import ReachabilityCompat
import Synchronization
import SystemCalls
import TestTraits
import Testing

/// Alamofire's own NetworkReachabilityManagerTests that do not read
/// SystemConfiguration's flags, against ReachabilityCompat's in-process backend on an
/// embedded kernel (`Tests/EmbeddedKernel`): the manager's contract, as any user. The
/// daemon-backed manager, on a real kernel: ReachdTests' ClientAPITests.
@Suite("ReachabilityCompat: Alamofire's NetworkReachabilityManager tests, in process", .serialized, .ownThreads)
struct NetworkReachabilityManagerTests {
    typealias Status = NetworkReachabilityManager.NetworkReachabilityStatus

    /// A manager of `kernel`'s network, never asking a daemon.
    static func manager(_ kernel: EmbeddedKernel, host: String? = nil) -> NetworkReachabilityManager {
        NetworkReachabilityManager(host: host, endpoint: nil, options: kernel.options())!
    }

    /// A host with its loopback and, with `uplink`, an Ethernet uplink and a default route.
    static func kernel(uplink: Bool = true) -> EmbeddedKernel {
        let kernel = EmbeddedKernel()
        kernel.addLoopback()
        if uplink { kernel.addUplink() }
        return kernel
    }

    /// Every status a listener was called with, in order.
    final class Listened: Sendable {
        private let statuses = Mutex<[Status]>([])
        var all: [Status] { statuses.withLock { $0 } }
        func record(_ status: Status) { statuses.withLock { $0.append(status) } }

        func wait(for count: Int) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if all.count >= count { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return all.count >= count
        }
    }

    /// A queue of the test's own: the main queue does not run under swift test.
    let queue = DispatchQueue(label: "listener")

    // MARK: - Initialization

    @Test("the public initialisers: from a host, from the zero address; nil for a URL instead of a host")
    func initialisers() {
        #expect(NetworkReachabilityManager(host: "localhost") != nil)
        #expect(NetworkReachabilityManager() != nil)
        #expect(NetworkReachabilityManager.default != nil)
        #expect(NetworkReachabilityManager(host: "https://example.com") == nil, "a scheme is not a host")
    }

    @Test("a host manager of localhost is reachable on Ethernet or Wi-Fi, before listening")
    func hostManagerIsReachable() async throws {
        let manager = Self.manager(Self.kernel(uplink: false), host: "localhost")
        #expect(manager.status == .reachable(.ethernetOrWiFi))
        #expect(manager.isReachable && manager.isReachableOnEthernetOrWiFi && !manager.isReachableOnCellular)
        #expect(manager.backend == .inProcess)
    }

    @Test("an address manager starts with the default path's status, and is notReachable without a route")
    func addressManagerStatus() async throws {
        let kernel = Self.kernel()
        let manager = Self.manager(kernel)
        #expect(manager.status == .reachable(.ethernetOrWiFi))
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        #expect(manager.status == .notReachable)
        #expect(!manager.isReachable)
    }

    @Test("listening calls the listener at once, then only when the status changes — not for an address")
    func listenerIsNotifiedAndStatusOnly() async throws {
        let kernel = Self.kernel()
        let manager = Self.manager(kernel)
        let listened = Listened()
        #expect(manager.startListening(onQueue: queue) { listened.record($0) })
        #expect(await listened.wait(for: 1))
        #expect(listened.all == [.reachable(.ethernetOrWiFi)])
        kernel.addAddress(InterfaceAddress(interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("192.0.2.9")!, prefixLength: 24))
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        #expect(await listened.wait(for: 2))
        kernel.addRoute(EmbeddedKernel.uplinkRoute4)
        #expect(await listened.wait(for: 3))
        try await Task.sleep(for: .milliseconds(200))
        #expect(listened.all == [.reachable(.ethernetOrWiFi), .notReachable, .reachable(.ethernetOrWiFi)])
        manager.stopListening()
    }

    @Test("a zero manager and a host manager can be properly restarted: each listening calls its listener")
    func restart() async throws {
        let kernel = Self.kernel()
        for manager in [Self.manager(kernel), Self.manager(kernel, host: "localhost")] {
            let first = Listened()
            let second = Listened()
            manager.startListening(onQueue: queue) { first.record($0) }
            #expect(await first.wait(for: 1))
            manager.stopListening()
            manager.startListening(onQueue: queue) { second.record($0) }
            #expect(await second.wait(for: 1))
            #expect(manager.status == .reachable(.ethernetOrWiFi))
            try await Task.sleep(for: .milliseconds(50))
            #expect(first.all.count == 1, "a stopped listener is never called again")
            manager.stopListening()
        }
    }

    @Test("every listening's first call comes, however soon the first path does: started 40 times in a row")
    func firstCallIsNeverLost() async throws {
        // The first path can reach the manager before startListening has returned; it once
        // found no listener yet, was taken as the previous status, and that listening was never called.
        let manager = Self.manager(Self.kernel())
        for round in 1...40 {
            let listened = Listened()
            manager.startListening(onQueue: queue) { listened.record($0) }
            #expect(await listened.wait(for: 1), "listening \(round) was never called")
            manager.stopListening()
        }
    }

    @Test("a manager can be deinitialised, also while it listens: its monitor stops and nothing is called after")
    func deinitWhileListening() async throws {
        let kernel = Self.kernel()
        var manager: NetworkReachabilityManager? = Self.manager(kernel)
        weak let weakManager = manager
        let listened = Listened()
        manager?.startListening(onQueue: queue) { listened.record($0) }
        #expect(await listened.wait(for: 1))
        manager = nil
        #expect(weakManager == nil)
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        try await Task.sleep(for: .milliseconds(200))
        #expect(listened.all.count == 1)
    }
}
