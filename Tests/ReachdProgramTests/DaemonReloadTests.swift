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
    private struct Steps {
        var failedReload: String?
        var afterFailedReload: String?
        var reloaded = false
        var afterReload: String?
    }

    @Test("a reload that cannot watch its new engine keeps the old one, which still hears the kernel; one that can hears it through the new")
    func reloadNeverDeaf() async throws {
        try await withNamespaces("rdreload", "rdrouter") { ns in
            let (host, router) = (ns[0], ns[1])
            let steps = try NetworkNamespace(name: host.name).perform { () throws -> Steps in
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
                var steps = Steps()
                var next: ((String) -> Bool)?
                // The published document, looked at every 10 ms; each step waits for what it expects, 10 s at most.
                var check: EventLoop.Timer?
                check = try loop.timer {
                    if next?(daemon.describe()) == false { check?.arm(after: .milliseconds(10)) }
                }
                let deadline = try loop.timer { loop.exit(1) }
                deadline.arm(after: .seconds(10))
                daemon.publishCurrentPath()
                #expect(daemon.describe().contains(#""status":"unreachable""#), "\(daemon.describe())")
                failNextWatch = true
                daemon.reloadConfiguration { result in
                    if case let .failure(error) = result { steps.failedReload = "\(error)" }
                }
                try host.addUplink(router: router)
                next = { document in
                    guard document.contains(#""status":"wired""#) else { return false }
                    steps.afterFailedReload = document
                    daemon.reloadConfiguration { result in
                        if case .success = result { steps.reloaded = true }
                    }
                    next = { document in
                        guard document.contains(#""status":"unreachable""#) else { return false }
                        steps.afterReload = document
                        loop.exit(0)
                        return true
                    }
                    _ = try? host.ip("link set dev eth0 down")
                    return false
                }
                check?.arm(after: .zero)
                _ = try loop.run()
                return steps
            }
            #expect(steps.failedReload?.contains("watching descriptor") == true, "the failed reload said why: \(steps.failedReload ?? "nothing")")
            #expect(steps.afterFailedReload != nil, "the uplink that came after the failed reload was published")
            #expect(steps.reloaded)
            #expect(steps.afterReload?.contains("unreachable") == true, "the link taken down after the good reload was published: \(steps.afterReload ?? "nothing")")
        }
    }
}
