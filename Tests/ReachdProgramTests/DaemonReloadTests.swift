@testable import ReachdProgram
#if canImport(Glibc)
import Glibc
#endif
import NamespaceTesting
import Netlink
import ReachabilityBus
import TestTraits
import Testing

/// The daemon in this process, on a thread in a test namespace (so that all it opens is
/// there): a reload may fail at any step, and the daemon must still hear the kernel.
@Suite("Daemon reload: never deaf", .needsRoot, .ownThreads)
struct DaemonReloadTests {
    /// What the daemon published, step by step.
    private struct Seen {
        var failedReload: String?
        var afterFailedReload: String?
        var reloaded = false
        var afterReload: String?
    }

    @Test("a reload that cannot watch its new engine keeps the old one, which still hears the kernel; one that can hears it through the new")
    func reloadNeverDeaf() async throws {
        try await withNamespaces("rdreload", "rdrouter") { ns in
            let (host, router) = (ns[0], ns[1])
            let seen = try NetworkNamespace(name: host.name).perform { () throws -> Seen in
                let loop = try EventLoop()
                var failNextWatch = false
                let daemon = try Daemon(configFile: "/nonexistent", configuration: DaemonConfiguration(), helper: nil, loop: loop) {
                    descriptor, readable in
                    if failNextWatch {
                        failNextWatch = false
                        throw BusError("watching descriptor \(descriptor)", code: ENOMEM)  // as sd_event_add_io would say
                    }
                    return try loop.onReadable(descriptor, readable)
                }
                var seen = Seen()
                daemon.publishCurrentPath()
                #expect(daemon.describe().contains(#""status":"unreachable""#), "\(daemon.describe())")
                failNextWatch = true
                daemon.reloadConfiguration { result in
                    if case let .failure(error) = result { seen.failedReload = "\(error)" }
                }
                try host.addUplink(router: router)
                // Each step waits for a status in the published document (looked at every 10 ms, 10 s in all), then acts.
                var steps: [(status: String, then: (String) -> Void)] = [
                    ("wired", { document in
                        seen.afterFailedReload = document
                        daemon.reloadConfiguration { result in
                            if case .success = result { seen.reloaded = true }
                        }
                        _ = try? host.ip("link set dev eth0 down")
                    }),
                    ("unreachable", { document in
                        seen.afterReload = document
                        loop.exit(0)
                    }),
                ]
                var check: EventLoop.Timer?
                check = try loop.timer {
                    let document = daemon.describe()
                    if let step = steps.first, document.contains(#""status":"\#(step.status)""#) {
                        steps.removeFirst()
                        step.then(document)
                    }
                    if !steps.isEmpty { check?.arm(after: .milliseconds(10)) }
                }
                let deadline = try loop.timer { loop.exit(1) }
                deadline.arm(after: .seconds(10))
                check?.arm(after: .zero)
                _ = try loop.run()
                return seen
            }
            #expect(seen.failedReload?.contains("watching descriptor") == true, "the failed reload said why: \(seen.failedReload ?? "nothing")")
            #expect(seen.afterFailedReload != nil, "the uplink that came after the failed reload was published")
            #expect(seen.reloaded)
            #expect(seen.afterReload?.contains("unreachable") == true, "the link taken down after the good reload was published: \(seen.afterReload ?? "nothing")")
        }
    }
}
