import Foundation
import NamespaceTesting
import Reachability
import TestTraits
import Testing

/// ENOBUFS is "state unknown": the monitor re-dumps and ends in the kernel's state.
@Suite("Overrun recovery", .needsNamespaces, .ownThreads)
struct OverrunTests {
    @Test("5,000 link flaps into a tiny receive buffer end in the kernel's state, and the monitor keeps reacting")
    func flapStorm() async throws {
        try await withNamespaces("storm", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            try ns[0].ip("link add name flap0 type veth peer name flap1")
            // An address makes flap0 an available interface: the document lists its state.
            try ns[0].ip("addr add 10.2.0.2/24 dev flap0")
            // The smallest buffer the kernel grants: a few messages overflow it.
            let monitor = ReachabilityMonitor(options: try options(ns[0], receiveBufferSize: 1))
            try monitor.start()
            defer { monitor.stop() }
            var commands: [String] = []
            for _ in 0..<2_500 {
                commands.append("link set dev flap0 up")
                commands.append("link set dev flap0 down")
            }
            commands.append("link set dev flap0 up")
            commands.append("link set dev flap1 up")
            commands.append("route del default")
            try ns[0].ipBatch(commands)

            try await waitForPath(monitor, "the storm's end state") { path in
                path.reason == .noRoute && path.interfaces.contains { $0.name == "flap0" && $0.up && $0.carrier }
            }
            #expect(monitor.statistics.overruns > 0, "the test must really overrun the buffer")
            #expect(monitor.statistics.dumps > 1, "every overrun is answered with a dump")
            // What the monitor believes is what a fresh look at the kernel says, once the kernel
            // has done what the storm set off. It goes on after the end state above: a link that
            // gained carrier is made operational, and gets its IPv6 link-local address when
            // duplicate address detection ends, each with a message the monitor reads later.
            try await expectAgreesWithFreshLook(monitor, ns[0])

            try ns[0].ip("route add default via 10.1.0.1 dev eth0")
            try await waitForPath(monitor, "a change after the storm") { $0.status == .wired }
        }
    }
}
