import EmbeddedKernel
import Foundation
import NamespaceTesting
import Netlink
import Reachability
import Testing

/// The in-process monitor on a container host (docs/path.md, "Available interfaces"), on the
/// embedded kernel: an uplink, a CNI bridge with one pod that stays, and pods that come and
/// go while nobody reads. The daemon's side, with real veths, is ContainerHostTests.
@Suite("a container host, in-process (embedded kernel)")
struct ContainerHostMonitorTests {
    static let bridge: Int32 = 3

    /// The pods' veths, `master` the bridge, as `ip link add … type veth; ip link set … master cni0` announces them.
    static func pod(_ kernel: EmbeddedKernel, index: Int32, name: String) {
        kernel.setLink(Link(index: index, name: name, kind: "veth", masterIndex: bridge))
    }

    @Test("in-process: the paths stream holds the latest path, the interface stream one entry per interface")
    func library() async throws {
        let kernel = EmbeddedKernel()
        kernel.addLoopback()
        kernel.addUplink()
        kernel.setLink(Link(index: Self.bridge, name: "cni0", kind: "bridge"))
        Self.pod(kernel, index: 4, name: "vhstay")
        kernel.setLink(Link(index: 5, name: "vpstay", kind: "veth"))
        let monitor = ReachabilityMonitor(options: kernel.options())
        try monitor.start()
        defer { monitor.stop() }
        let paths = monitor.paths
        let interfaces = monitor.interfaceChanges
        let inventory = interfaces.buffer.waitingCount
        #expect(inventory >= 5, "lo, eth0, cni0, vhstay, vpstay")
        // One change seen for certain, then, while nobody reads, the path changes 200 times and 100 pods come and go.
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        #expect(await eventually { monitor.statistics.published >= 2 })
        kernel.addRoute(EmbeddedKernel.uplinkRoute4)
        #expect(await eventually { monitor.statistics.published >= 3 })
        for _ in 0..<100 {
            kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
            kernel.addRoute(EmbeddedKernel.uplinkRoute4)
        }
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4)
        for pod in Int32(0)..<100 { Self.pod(kernel, index: 100 + pod, name: "vh\(pod)") }
        for pod in Int32(0)..<100 { kernel.removeLink(100 + pod) }
        #expect(await eventually { kernel.unread == 0 && monitor.currentPath?.status == .unreachable })
        try await Task.sleep(for: .milliseconds(200))
        #expect(monitor.statistics.published > 3, "the path did change: \(monitor.statistics.published) published")
        // At most one entry per interface ever seen, never one per change.
        #expect(interfaces.buffer.waitingCount <= inventory + 100, "\(interfaces.buffer.waitingCount) waiting")
        var iterator = paths.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.initial == true, "the first path a consumer reads is marked initial")
        #expect(first?.status == .unreachable, "and it is the latest: \(String(describing: first?.status))")
        monitor.stop()
        #expect(await iterator.next() == nil, "the stream held one path, not a queue")
    }
}
