@testable import ReachdProgram
import EmbeddedKernel
import Netlink
import ReachabilityCore
import SystemCalls
import Testing

/// The daemon's publication decisions, whole (`Daemon` on its sd-event loop) on an
/// embedded kernel: what a change costs it, and what it tells subscribers.
@Suite("Daemon: what each change costs and publishes", .ownThreads)
struct DaemonDecisionTests {
    /// Counts a scrape reads: documents published, and evaluations of the path.
    private struct Counts: Equatable {
        var documents: Double
        var evaluations: Double

        init(_ embedded: EmbeddedDaemon) {
            documents = embedded.metric("reachd_path_changes_total") ?? -1
            evaluations = embedded.metric("reachd_path_evaluations_total") ?? -1
        }
    }

    @Test("pods coming and going cost no evaluation and no document (docs/path.md)")
    func podsCostNothing() throws {
        let embedded = try EmbeddedDaemon()
        let kernel = embedded.kernel
        kernel.addUplink()
        var before: Counts?
        var after: Counts?
        let finished = try embedded.run([
            .init(until: { $0.status == .wired && kernel.unread == 0 }, then: { _ in
                before = Counts(embedded)
                for pod in Int32(10) ..< 30 {
                    kernel.setLink(Link(index: pod, name: "veth\(pod)", kind: "veth", flags: [.up], operationalState: .lowerLayerDown))
                    kernel.setLink(pod, carrier: true)  // before the CNI enslaves it
                    kernel.addRoute(EmbeddedKernel.Route(IPAddress("fe80::")!, prefixLength: 64, outputInterface: pod, metric: 256))
                    kernel.addRoute(EmbeddedKernel.Route(IPAddress("ff00::")!, prefixLength: 8, outputInterface: pod, metric: 256))
                }
                for pod in Int32(10) ..< 30 { kernel.removeLink(pod) }
            }),
            .init(until: { _ in kernel.unread == 0 }, then: { _ in after = Counts(embedded) }),
        ])
        #expect(finished)
        #expect(before != nil && before == after, "before \(String(describing: before)), after \(String(describing: after))")
    }

    @Test("a burst on the path's interface is read whole: one evaluation, one document")
    func aBurstIsOneDocument() throws {
        let embedded = try EmbeddedDaemon()
        let kernel = embedded.kernel
        kernel.addUplink()
        var before: Counts?
        var after: Counts?
        let finished = try embedded.run([
            .init(until: { $0.status == .wired && kernel.unread == 0 }, then: { _ in
                before = Counts(embedded)
                kernel.send((1 ... 50).map {
                    .address(InterfaceAddress(interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("198.51.100.\($0)")!, prefixLength: 32))
                })
            }),
            .init(until: { _ in kernel.unread == 0 }, then: { _ in after = Counts(embedded) }),
        ])
        #expect(finished)
        #expect(after?.evaluations == before.map { $0.evaluations + 1 })
        #expect(after?.documents == before.map { $0.documents + 1 })
        #expect(embedded.path.interfaces.first { $0.name == "eth0" }?.addresses.count == 51)
    }

    @Test("a kernel the daemon cannot re-read is unknown — never a guess — until a retry a second later reads it")
    func unreadableKernelIsUnknown() throws {
        let embedded = try EmbeddedDaemon()
        let kernel = embedded.kernel
        kernel.addUplink()
        var retried: ContinuousClock.Instant?
        let lost = ContinuousClock.now
        let finished = try embedded.run([
            .init(until: { $0.status == .wired }, then: { _ in
                kernel.failingDumps = 3  // the dump after the overrun, the watcher's own attempt, the first retry
                kernel.overrun()
            }),
            .init(until: { $0.status == .unknown }, then: { _ in }),
            .init(until: { $0.status == .wired }, then: { _ in retried = .now }),
        ])
        #expect(finished)
        #expect(kernel.failingDumps == 0)
        let waited = retried.map { lost.duration(to: $0) }
        #expect(waited.map { $0 >= .seconds(2) } == true, "two retries, a second apart: \(String(describing: waited))")
    }
}
