import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import Reachability
import ReachabilityCore
import Synchronization
import SystemCalls
import TestTraits
import Testing

/// What subscribers receive: the current path first (initial), then one path
/// per real change, never the same document twice (on an embedded kernel: `Tests/EmbeddedKernel`).
@Suite("Delivery", .ownThreads)
struct DeliveryTests {
    /// A route's removal is looked at again (PathEngine.recheckDelays): a route re-added
    /// during one of those evaluations would reach only its later lookups (the resolver's),
    /// a document half before and half after. Returns once they are over and the kernel
    /// has not been asked for 50 ms.
    static func waitForRechecks(_ kernel: EmbeddedKernel) async throws {
        try await Task.sleep(for: PathEngine.recheckDelays.last!)
        var asked = -1
        for _ in 0..<100 where kernel.lookups != asked {
            asked = kernel.lookups
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test("onChange, paths and NotificationCenter: initial, then transitions, no repeats")
    func deliveries() async throws {
        let kernel = EmbeddedKernel()
        kernel.addUplink()
        let monitor = ReachabilityMonitor(options: kernel.options())
        let callbacks = Recorder()
        let notifications = Recorder()
        monitor.onChange = { callbacks.record($0) }
        let observer = NotificationCenter.default.addObserver(
            forName: ReachabilityMonitor.pathDidChangeNotification, object: monitor, queue: nil
        ) { notification in
            if let path = notification.userInfo?[ReachabilityMonitor.pathUserInfoKey] as? Path {
                notifications.record(path)
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let stream = monitor.paths // asked for before start: gets the first path as its initial
        try monitor.start()
        let streamed = Task { () -> [Path] in
            var paths: [Path] = []
            for await path in stream { paths.append(path) }
            return paths
        }
        // Changes that matter, and one that does not (an unrelated route).
        kernel.addRoute(
            EmbeddedKernel.Route(
                IPAddress("10.77.0.0")!, prefixLength: 16, outputInterface: EmbeddedKernel.uplink,
                gateway: IPAddress("192.0.2.1")))
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        try await waitForPath(monitor, "no-route") { $0.reason == .noRoute }
        try await Self.waitForRechecks(kernel)
        kernel.addRoute(EmbeddedKernel.uplinkRoute4)
        try await waitForPath(monitor, "wired") { $0.status == .wired }
        try await Task.sleep(for: .milliseconds(200))
        monitor.stop()
        let fromStream = await streamed.value

        for (name, paths) in [("callbacks", callbacks.paths), ("notifications", notifications.paths)] {
            #expect(paths.map(\.status) == [.wired, .unreachable, .wired], "\(name)")
            #expect(paths.map(\.initial) == [true, false, false], "\(name)")
        }
        // The stream holds the latest path, not a queue: a consumer that was not
        // scheduled in time skips what it missed, but starts on an initial path and ends on the latest.
        #expect(
            [[.wired], [.wired, .wired], [.unreachable, .wired], [.wired, .unreachable, .wired]].contains(fromStream.map(\.status)),
            "\(fromStream.map(\.status))")
        #expect(fromStream.first?.initial == true && fromStream.dropFirst().allSatisfy { !$0.initial })
        // (A stream that skipped an unreachable-and-back may hand its consumer the same path twice.)
        for (name, paths) in [("callbacks", callbacks.paths), ("notifications", notifications.paths)] {
            for (previous, next) in zip(paths, paths.dropFirst()) {
                #expect(!previous.isSamePath(as: next), "\(name) repeated a document")
            }
        }
        #expect(callbacks.paths[1].since >= callbacks.paths[0].since)
        #expect(monitor.currentPath == nil, "a stopped monitor has no path")
    }

    @Test("a late subscriber gets the current path as its initial; the monitor restarts")
    func lateSubscriberAndRestart() async throws {
        let kernel = EmbeddedKernel()
        kernel.addUplink()
        let monitor = ReachabilityMonitor(options: kernel.options())
        try monitor.start()
        var iterator = monitor.paths.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.initial == true && first?.status == .wired)
        monitor.stop()
        #expect(await iterator.next() == nil, "streams end when the monitor stops")

        try monitor.start()
        defer { monitor.stop() }
        let recorder = Recorder()
        monitor.onChange = { recorder.record($0) }
        kernel.setLink(EmbeddedKernel.uplink, carrier: false) // the peer went down
        try await waitForPath(monitor, "no-carrier") { $0.reason == .noCarrier }
        // The handler runs on the monitor's queue, which a loaded machine may reach late:
        // wait for the two deliveries, then give a third (there should be none) the time to come.
        #expect(await eventually { recorder.paths.count >= 2 }, "\(recorder.paths)")
        try await Task.sleep(for: .milliseconds(100))
        #expect(recorder.paths.map(\.initial) == [true, false])
        #expect(recorder.paths.map(\.reason) == [nil, .noCarrier])
    }

    @Test("a stopped monitor lets go of all it held: started and stopped 200 times, nothing stays subscribed to the kernel")
    func stopLetsGo() throws {
        // Each start's loop, held by its own thread's body, once outlived stop with its
        // socket, wake-up pipe and resolv.conf watch: an app that listened and stopped 128
        // times ran out of inotify instances, for every process of its user.
        let kernel = EmbeddedKernel()
        kernel.addUplink()
        let monitor = ReachabilityMonitor(options: kernel.options())
        for _ in 0..<200 {
            try monitor.start()
            monitor.stop()
        }
        #expect(kernel.subscribers == 0)
    }

    @Test("inline delivery: the first path on the starting thread, each change on the monitor's own (named so), none after stop")
    func inlineDelivery() async throws {
        let kernel = EmbeddedKernel()
        kernel.addUplink()
        let monitor = ReachabilityMonitor(options: kernel.options())
        let inline = Recorder()
        let threads = Mutex<[pthread_t]>([])
        let names = Mutex<[String]>([])
        let starter = pthread_self()
        try monitor.start(deliveringInline: { path in
            threads.withLock { $0.append(pthread_self()) }
            names.withLock { $0.append(currentThreadName()) }
            inline.record(path)
        })
        #expect(inline.paths.map(\.status) == [.wired], "the first path is handed over before start returns")
        let stream = monitor.paths // streams are still fed
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.status == .wired)
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        #expect(await iterator.next()?.reason == .noRoute)
        try await Self.waitForRechecks(kernel)
        kernel.addRoute(EmbeddedKernel.uplinkRoute4)
        #expect(await eventually { inline.paths.count >= 3 }, "\(inline.paths)")
        monitor.stop()
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        try monitor.start() // without a handler: the old one is not called again
        defer { monitor.stop() }
        try await waitForPath(monitor, "no-route") { $0.reason == .noRoute }
        try await Task.sleep(for: .milliseconds(100))

        #expect(inline.paths.map(\.status) == [.wired, .unreachable, .wired])
        #expect(inline.paths.map(\.initial) == [true, false, false])
        let called = threads.withLock { $0 }
        #expect(pthread_equal(called[0], starter) != 0)
        #expect(called.dropFirst().allSatisfy { pthread_equal($0, called[1]) != 0 && pthread_equal($0, starter) == 0 })
        // Started from a task, on the shared pool's thread: the loop's own name, not the pool's it was created from.
        #expect(names.withLock { Array($0.dropFirst()) } == ["reach-monitor", "reach-monitor"])
    }
}
