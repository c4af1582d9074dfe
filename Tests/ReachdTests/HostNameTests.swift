import Dispatch
import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import ReachabilityCompat
import Synchronization
import SystemCalls
import TestTraits
import Testing

@testable import ReachdProgram

/// Host names a client hands the daemon, resolved off its loop under per-caller limits
/// (docs/security.md): reachd (`ServedDaemon`, as any user) whose resolver answers as the
/// test says — nothing for a name it does not know, and a `slow.test` name only when the
/// test lets it, as a resolver that never hears back holds a lookup. The system's resolver
/// itself is `HostResolver`'s, tested on its own (HostResolverTests).
@Suite("Host names through reachd (embedded kernel, a test's resolver)", .ownThreads)
struct HostNameTests {
    static let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]

    static func withDaemon(_ body: (ServedDaemon) async throws -> Void) async throws {
        try await ServedDaemon.serving(
            names: .init(["known.test": [IPAddress("10.1.0.7")!]]), { $0.addUplink(subnet: "10.1.0") }, body)
    }

    @Test("Route() of a name that does not resolve fails saying so; one that does is answered with its path")
    func unresolvableRoute() async throws {
        try await Self.withDaemon { daemon in
            let unknown = try daemon.busctl(["call"] + Self.object + ["Route", "s", "no-such-host.invalid"], check: false)
            #expect(unknown.status != 0 && unknown.error.contains("cannot resolve no-such-host.invalid"), "\(unknown.error)")
            let known = try daemon.busctl(["call"] + Self.object + ["Route", "s", "known.test"]).output
            #expect(known.contains(#"\"destination\":\"10.1.0.7\""#), "\(known)")
        }
    }

    @Test("Route(): a name longer than 253 bytes is refused; a user's fifth lookup while four resolve is refused")
    func routeBounds() async throws {
        try await Self.withDaemon { daemon in
            let long = try daemon.busctl(["call"] + Self.object + ["Route", "s", String(repeating: "a", count: 300)], check: false)
            #expect(long.status != 0 && long.error.contains("neither an IP address nor a host name"), "\(long.error)")

            // Five lookups at once from one user (five connections: more do not buy more).
            let calls = try (1...5).map { number in
                let call = Process()
                call.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
                call.arguments = ["--address=\(daemon.address)", "call"] + Self.object + ["Route", "s", "host\(number).slow.test"]
                let errors = Pipe()
                call.standardError = errors
                call.standardOutput = FileHandle.nullDevice
                try call.run()
                return (call, errors)
            }
            // The fifth is refused at once, while the four still resolve.
            #expect(await eventually { calls.count { !$0.0.isRunning } == 1 }, "one call answered while the names resolve")
            try await Task.sleep(for: .milliseconds(200))
            #expect(calls.count { !$0.0.isRunning } == 1)
            daemon.names.answerSlowNames()
            let answers = calls.map { call, errors in
                let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                call.waitUntilExit()
                return text
            }
            #expect(answers.count { $0.contains("at most 4 Route() lookups of one caller") } == 1, "\(answers)")
            #expect(answers.count { $0.contains("cannot resolve host") } == 4, "\(answers)")
        }
    }

    @Test("lookups that hang hold no thread of the shared pool: all 32 a daemon admits wait at once, and tasks still run")
    func hangingLookups() async throws {
        try await Self.withDaemon { daemon in
            let admitted = PathQueries.routesInFlight
            let asked = ContinuousClock.now
            await daemon.onLoop { daemon in
                for number in 0..<admitted {
                    let caller = "caller\(number / PathQueries.routesPerCaller)"
                    daemon.route(to: "host\(number).slow.test", caller: caller) { _ in }
                }
            }
            #expect(await eventually { daemon.names.waitingLookups == admitted }, "\(daemon.names.waitingLookups) waiting")
            // Each on a thread named for it (as `ps -L -C reachd` shows it), not after the loop's.
            let named = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").filter { task in
                (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) == "reach-lookup\n"
            }
            #expect(named.count >= admitted, "\(named.count) threads named reach-lookup")
            let ran = Mutex<Set<String>>([])
            Task.detached { ran.withLock { _ = $0.insert("task") } }
            DispatchQueue.global().async { ran.withLock { _ = $0.insert("dispatch") } }
            #expect(await eventually { ran.withLock { $0.count } == 2 }, "\(ran.withLock { $0 }) ran")
            // Queued on Dispatch's pool, the lookups started about one a second (31 s for
            // the 32), and held Swift's tasks up meanwhile: on Linux both share that pool,
            // so `eventually` itself waited, and only the clock tells.
            let waited = ContinuousClock.now - asked
            #expect(waited < .seconds(10), "\(waited) until every lookup waited and a task ran")
            daemon.names.answerSlowNames()
            #expect(await eventually { daemon.names.waitingLookups == 0 })
        }
    }

    @Test("the default path moves: every watched name is looked up again, 40 names by 32 threads at most")
    func watchedNamesLookedUpAgain() async throws {
        let names = (0..<40).map { "watched\($0).slow.test" }
        let known = Dictionary(uniqueKeysWithValues: names.map { ($0, [IPAddress("10.9.0.1")!]) })
        try await ServedDaemon.serving(names: .init(known)) { kernel in
            kernel.addUplink("eth0", index: 2, subnet: "10.1.0", metric: 100)
            kernel.addUplink("eth1", index: 3, subnet: "10.2.0", metric: 600)
        } _: { daemon in
            daemon.names.answerSlowNames()
            let watching = Mutex(0)
            for (number, name) in names.enumerated() {
                await daemon.onLoop { daemon in
                    daemon.watchPath(destination: name, interfaceTypes: "", caller: "caller\(number)") { result in
                        if case .success = result { watching.withLock { $0 += 1 } }
                    }
                }
            }
            #expect(await eventually { watching.withLock { $0 } == names.count })

            daemon.names.holdSlowNames()
            daemon.kernel.setLink(2, up: false) // the default path leaves by eth1 now
            #expect(await eventually { daemon.names.waitingLookups == PathQueries.routesInFlight })
            try await Task.sleep(for: .milliseconds(200))
            #expect(daemon.names.waitingLookups == PathQueries.routesInFlight, "one thread per share, not per name")
            daemon.names.answerSlowNames()
            #expect(await eventually { names.allSatisfy { daemon.names.answers(of: $0) == 2 } })
        }
    }

    @Test("ReachabilityCompat: a host that does not resolve reads as unknown within the manager's resolution timeout")
    func compatUnresolvableHost() async throws {
        try await Self.withDaemon { daemon in
            let manager = NetworkReachabilityManager(
                host: "nonexistent.invalid", endpoint: .address(daemon.address),
                resolutionTimeout: .milliseconds(500))!
            #expect(manager.status == .unknown)
            #expect(manager.backend == .daemon)
        }
    }
}
