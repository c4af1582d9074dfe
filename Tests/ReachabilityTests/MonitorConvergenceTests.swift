import Foundation
import NamespaceTesting
import Reachability
import TestTraits
import Testing

/// "State, not history" (docs/api.md, "What subscribers are sent") for the in-process library: subscribers slower than the
/// kernel (a `paths` consumer and an `onChange` handler that each take 2 ms per
/// path) may see intermediate paths coalesced, never a stale last one.
@Suite("the monitor's subscribers converge", .needsNamespaces, .ownThreads)
struct MonitorConvergenceTests {
    @Test(
        "a burst that overruns netlink, slow subscribers: each ends on the path a fresh look at the kernel gives",
        .timeLimit(.minutes(2)))
    func slowSubscribers() async throws {
        try await withNamespaces("mconv", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let monitor = ReachabilityMonitor(options: try options(ns[0], receiveBufferSize: 1))
            try monitor.start()
            defer { monitor.stop() }
            let handled = Recorder()
            monitor.onChange = { path in
                usleep(2_000)
                handled.record(path)
            }
            let streamed = Recorder()
            let consumer = Task.detached {
                for await path in monitor.paths {
                    usleep(2_000)
                    streamed.record(path)
                }
            }
            defer { consumer.cancel() }
            var commands: [String] = []
            for round in 0..<400 {
                commands += [
                    "route del default", "link set dev eth0 down", "link set dev eth0 up",
                    "addr add 10.9.\(round / 250).\(round % 250 + 1)/32 dev eth0", "route add default via 10.1.0.1 dev eth0"
                ]
            }
            commands.append("route del default")
            _ = try run(["ip", "-n", ns[0].name, "-force", "-batch", "-"], check: false, input: commands.joined(separator: "\n") + "\n")
            // The first path with every address may be one the burst passed through (the link just up again,
            // before the last routes): what the monitor holds is compared once it settled.
            _ = try await waitForPath(monitor, "the burst's end") { path in
                path.reason == .noRoute && path.interfaces.flatMap(\.addresses).count >= 401
            }
            try await Task.sleep(for: .milliseconds(600)) // the IPv4 re-checks after a removal
            let fresh = try path(ns[0])
            #expect(monitor.currentPath?.isSamePath(as: fresh) == true, "the monitor holds what the kernel says")
            // Slow subscribers drain their backlog, then hold the same path.
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline,
                !(handled.paths.last?.isSamePath(as: fresh) == true && streamed.paths.last?.isSamePath(as: fresh) == true)
            {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(
                handled.paths.last?.isSamePath(as: fresh) == true, "onChange ends on the kernel's path (\(handled.paths.count) delivered)")
            #expect(
                streamed.paths.last?.isSamePath(as: fresh) == true, "paths ends on the kernel's path (\(streamed.paths.count) delivered)")
            #expect(monitor.statistics.overruns > 0, "the burst must overrun the receive buffer")
        }
    }
}
