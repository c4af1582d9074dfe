import ReachabilityCore
import Testing

@testable import ReachdProgram

/// A reload may fail at any step, and the daemon must still hear the kernel
/// (the daemon in this process, on an embedded kernel).
@Suite("Daemon reload: never deaf", .ownThreads)
struct DaemonReloadTests {
    @Test(
        "a reload that cannot watch its new engine keeps the old one, which still hears the kernel; one that can hears it through the new")
    func reloadNeverDeaf() throws {
        let embedded = try EmbeddedDaemon()
        let (kernel, daemon) = (embedded.kernel, embedded.daemon!)
        #expect(embedded.path.status == .unreachable, "\(daemon.describe())")
        var failedReload: String?
        var reloaded = false
        var afterReload: Path?
        embedded.failNextWatch = true
        daemon.reloadConfiguration { result in
            if case let .failure(error) = result { failedReload = "\(error)" }
        }
        embedded.kernel.addUplink()
        let finished = try embedded.run([
            .init(
                until: { $0.status == .wired },
                then: { _ in
                    // The uplink that came after the failed reload was heard; now a good reload, then a change.
                    daemon.reloadConfiguration { result in
                        if case .success = result { reloaded = true }
                    }
                    kernel.setLink(2, up: false)
                }),
            .init(until: { $0.status == .unreachable }, then: { afterReload = $0 })
        ])
        #expect(failedReload?.contains("watching descriptor") == true, "the failed reload said why: \(failedReload ?? "nothing")")
        #expect(finished, "published: the uplink after the failed reload, the link down after the good one: \(daemon.describe())")
        #expect(reloaded)
        #expect(afterReload?.reason == .linkDown, "\(afterReload?.jsonString() ?? "nothing")")
    }
}
