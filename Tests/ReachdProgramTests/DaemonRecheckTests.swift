import EmbeddedKernel
import ReachabilityCore
import Testing

@testable import ReachdProgram

/// The daemon's own answer to IPv4 announcing a route removal before it unlinks the
/// route: it looks again on its sd-event timer, with nothing more from the kernel.
@Suite("Daemon: IPv4 removals looked at again", .ownThreads)
struct DaemonRecheckTests {
    @Test("a removal still linked at the first look is published when a re-check finds it gone")
    func removalSeenByARecheck() throws {
        let embedded = try EmbeddedDaemon()
        let kernel = embedded.kernel
        embedded.kernel.addUplink()
        let finished = try embedded.run(
            [
                .init(
                    until: { $0.status == .wired },
                    then: { _ in
                        // Announced now; lookups find the route until the kernel's clock moves past 1 ms.
                        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4, unlinkedAfter: .milliseconds(1))
                    }),
                .init(
                    until: { _ in kernel.unread == 0 },
                    then: { path in
                        #expect(path.status == .wired, "the removal was read, and the first look still found the route")
                        kernel.clock.advance(by: .milliseconds(1)) // unlinked, and the kernel says nothing more
                    }),
                .init(until: { $0.status == .unreachable }, then: { _ in })
            ], deadline: .seconds(2))
        #expect(finished, "the removal was published by a re-check (they end 0.5 s after it): \(embedded.daemon.describe())")
    }
}
