import Foundation
import NamespaceTesting
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The daemon lets go of the pages only its start-up touched (docs/development.md,
/// "Idle memory"), and serves and follows the kernel as before.
@Suite("reachd's start-up pages (binary, network namespaces)", .needsNamespaces, .ownThreads)
struct StartupPagesTests {
    @Test("10 s after start its resident file pages fall; a change is still published after")
    func released() async throws {
        try await DaemonProcess.serving(in: "rdpages") { daemon, namespace in
            let before = daemon.residentFileKilobytes
            #expect(
                await eventually(.seconds(30)) { daemon.log.contains("start-up settled: ") },
                "\(daemon.log.suffix(2000))")
            let line = try #require(daemon.log.split(separator: "\n").first { $0.contains("start-up settled: ") })
            let released = Int(line.split(separator: " ").first { Int($0) != nil } ?? "") ?? 0
            #expect(released > 1024, "\(line)")
            let after = daemon.residentFileKilobytes
            #expect(after < before, "RssFile \(before) → \(after) KiB (\(line))")
            _ = try namespace.ip("route del default")
            #expect(
                await eventually {
                    (try? daemon.busctl(["get-property"] + DaemonServingTests.object + ["Status"]).output)?.contains("unreachable") == true
                })
            print("start-up pages: RssFile \(before) → \(after) KiB; \(line)")
        }
    }
}
