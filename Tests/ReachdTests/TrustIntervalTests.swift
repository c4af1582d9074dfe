import Foundation
import NamespaceTesting
import TestTraits
import Testing

/// The interval re-check waits out trust's shortest interval, a minute: a suite of its own,
/// so that it starts with the others rather than after the trust checks' serialized ones.
@Suite("reachd's interval trust re-check", .needsNamespaces, .ownThreads)
struct TrustIntervalTests {
    @Test(
        "recheck = \"interval\": a round at start, none on a path change, the next after the interval",
        .timeLimit(.minutes(3)))
    func intervalRecheck() async throws {
        try await withScratch { scratch in
            let config = scratch.appendingPathComponent("reachd.toml")
            try """
            [trust]
            recheck = "interval"
            interval = "1m"
            timeout = "1s"
            reports = "\(scratch.appendingPathComponent("reports").path)"

            [[trust.host]]
            match = "api.test"
            port = 8443
            connect = "10.1.0.1"
            """.write(to: config, atomically: true, encoding: .utf8)
            try await withNamespaces("rdinterval", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                func rounds() -> [String] { daemon.log.split(separator: "\n").filter { $0.contains("trust: checking") }.map(String.init) }
                #expect(await eventually { rounds().count == 1 }, "\(daemon.log)")
                #expect(rounds().first?.hasSuffix("(start)") == true, "\(rounds())")

                try ns[0].ip("route del default")
                #expect(await eventually { daemon.log.contains("path: unreachable") })
                try ns[0].ip("route add default via 10.1.0.1")
                #expect(await eventually { daemon.log.components(separatedBy: "path: wired").count == 3 }, "\(daemon.log)")
                try await Task.sleep(for: .seconds(1))
                #expect(rounds().count == 1, "a path change does not re-check: \(rounds())")

                #expect(await eventually(.seconds(90)) { rounds().count == 2 }, "\(daemon.log)")
                #expect(rounds().last?.hasSuffix("(interval)") == true, "\(rounds())")
            }
        }
    }
}
