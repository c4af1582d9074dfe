import Dispatch
import Foundation
import NamespaceTesting
import ReachabilityClient
import ReachabilityCompat
import Synchronization
import TestTraits
import Testing

/// Alamofire's own NetworkReachabilityManagerTests that do not read
/// SystemConfiguration's flags, against ReachabilityCompat's in-process backend
/// in a namespace (the daemon-backed manager: ReachdTests' ClientAPITests).
@Suite("ReachabilityCompat: Alamofire's NetworkReachabilityManager tests, in process", .serialized, .needsRoot, .ownThreads)
struct NetworkReachabilityManagerTests {
    typealias Status = NetworkReachabilityManager.NetworkReachabilityStatus

    /// A manager in `namespace`'s network, never asking a daemon.
    static func manager(_ namespace: TestNamespace, host: String? = nil) throws -> NetworkReachabilityManager {
        NetworkReachabilityManager(host: host, endpoint: nil, options: try MonitorOptions(networkNamespace: namespace.path))!
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
        try await withNamespaces("afhost") { ns in
            let manager = try Self.manager(ns[0], host: "localhost")
            #expect(manager.status == .reachable(.ethernetOrWiFi))
            #expect(manager.isReachable && manager.isReachableOnEthernetOrWiFi && !manager.isReachableOnCellular)
            #expect(manager.backend == .inProcess)
        }
    }

    @Test("an address manager starts with the default path's status, and is notReachable without a route")
    func addressManagerStatus() async throws {
        try await withNamespaces("afaddr", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let manager = try Self.manager(ns[0])
            #expect(manager.status == .reachable(.ethernetOrWiFi))
            try ns[0].ip("route del default")
            #expect(manager.status == .notReachable)
            #expect(!manager.isReachable)
        }
    }

    @Test("listening calls the listener at once, then only when the status changes — not for an address")
    func listenerIsNotifiedAndStatusOnly() async throws {
        try await withNamespaces("aflisten", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let manager = try Self.manager(ns[0])
            let listened = Listened()
            #expect(manager.startListening(onQueue: queue) { listened.record($0) })
            #expect(await listened.wait(for: 1))
            #expect(listened.all == [.reachable(.ethernetOrWiFi)])
            try ns[0].ip("addr add 10.1.0.9/24 dev eth0")
            try ns[0].ip("route del default")
            #expect(await listened.wait(for: 2))
            try ns[0].ip("route add default via 10.1.0.1")
            #expect(await listened.wait(for: 3))
            try await Task.sleep(for: .milliseconds(200))
            #expect(listened.all == [.reachable(.ethernetOrWiFi), .notReachable, .reachable(.ethernetOrWiFi)])
            manager.stopListening()
        }
    }

    @Test("a zero manager and a host manager can be properly restarted: each listening calls its listener")
    func restart() async throws {
        try await withNamespaces("afrestart", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            for manager in [try Self.manager(ns[0]), try Self.manager(ns[0], host: "localhost")] {
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
    }

    @Test("every listening's first call comes, however soon the first path does: started 40 times in a row")
    func firstCallIsNeverLost() async throws {
        // The first path can reach the manager before startListening has returned; it once
        // found no listener yet, was taken as the previous status, and that listening was never called.
        try await withNamespaces("affirst", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let manager = try Self.manager(ns[0])
            for round in 1...40 {
                let listened = Listened()
                manager.startListening(onQueue: queue) { listened.record($0) }
                #expect(await listened.wait(for: 1), "listening \(round) was never called")
                manager.stopListening()
            }
        }
    }

    @Test("a manager can be deinitialised, also while it listens: its monitor stops and nothing is called after")
    func deinitWhileListening() async throws {
        try await withNamespaces("afdeinit", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            var manager: NetworkReachabilityManager? = try Self.manager(ns[0])
            weak let weakManager = manager
            let listened = Listened()
            manager?.startListening(onQueue: queue) { listened.record($0) }
            #expect(await listened.wait(for: 1))
            manager = nil
            #expect(weakManager == nil)
            try ns[0].ip("route del default")
            try await Task.sleep(for: .milliseconds(200))
            #expect(listened.all.count == 1)
        }
    }
}
