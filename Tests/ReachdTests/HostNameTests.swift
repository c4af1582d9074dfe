import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import ReachabilityCompat
import SystemCalls
import TestTraits
import Testing

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
