import EmbeddedKernel
import IPAddresses
import Netlink
import ReachabilityCore
import SystemCalls
import Testing

@testable import ReachdProgram

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

    /// The counts once the daemon, on an uplink, has published `wired` and read everything, and
    /// again once it has read what `change` sent. nil when it never got that far.
    private static func counts(
        around change: @escaping (EmbeddedKernel) -> Void
    ) throws -> (before: Counts, after: Counts, daemon: EmbeddedDaemon)? {
        let embedded = try EmbeddedDaemon()
        let kernel = embedded.kernel
        kernel.addUplink()
        var before: Counts?
        var after: Counts?
        let finished = try embedded.run([
            .init(
                until: { $0.status == .wired && kernel.unread == 0 },
                then: { _ in
                    before = Counts(embedded)
                    change(kernel)
                }),
            .init(until: { _ in kernel.unread == 0 }, then: { _ in after = Counts(embedded) })
        ])
        guard finished, let before, let after else { return nil }
        return (before, after, embedded)
    }

    @Test("pods coming and going cost no evaluation and no document (docs/path.md)")
    func podsCostNothing() throws {
        let counts = try #require(
            try Self.counts { kernel in
                for pod in Int32(10)..<30 {
                    kernel.setLink(Link(index: pod, name: "veth\(pod)", kind: "veth", flags: [.up], operationalState: .lowerLayerDown))
                    kernel.setLink(pod, carrier: true) // before the CNI enslaves it
                    kernel.addRoute(EmbeddedKernel.Route(IPAddress("fe80::")!, prefixLength: 64, outputInterface: pod, metric: 256))
                    kernel.addRoute(EmbeddedKernel.Route(IPAddress("ff00::")!, prefixLength: 8, outputInterface: pod, metric: 256))
                }
                for pod in Int32(10)..<30 { kernel.removeLink(pod) }
            })
        #expect(counts.before == counts.after)
    }

    @Test("a burst on the path's interface is read whole: one evaluation, one document")
    func aBurstIsOneDocument() throws {
        let counts = try #require(
            try Self.counts { kernel in
                kernel.send(
                    (1...50).map {
                        .address(
                            InterfaceAddress(
                                interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("198.51.100.\($0)")!, prefixLength: 32))
                    })
            })
        #expect(counts.after.evaluations == counts.before.evaluations + 1)
        #expect(counts.after.documents == counts.before.documents + 1)
        #expect(counts.daemon.path.interfaces.first { $0.name == "eth0" }?.addresses.count == 51)
    }

    @Test("a kernel the daemon cannot re-read is unknown — never a guess — until a retry a second later reads it")
    func unreadableKernelIsUnknown() throws {
        let embedded = try EmbeddedDaemon()
        let kernel = embedded.kernel
        kernel.addUplink()
        var retried: ContinuousClock.Instant?
        let lost = ContinuousClock.now
        let finished = try embedded.run([
            .init(
                until: { $0.status == .wired },
                then: { _ in
                    kernel.failingDumps = 3 // the dump after the overrun, the watcher's own attempt, the first retry
                    kernel.overrun()
                }),
            .init(until: { $0.status == .unknown }, then: { _ in }),
            .init(until: { $0.status == .wired }, then: { _ in retried = .now })
        ])
        #expect(finished)
        #expect(kernel.failingDumps == 0)
        let waited = retried.map { lost.duration(to: $0) }
        #expect(waited.map { $0 >= .seconds(2) } == true, "two retries, a second apart: \(String(describing: waited))")
    }
}
