import NamespaceTesting
import ReachabilityCompat
import TestTraits
import Testing

/// Host names a client hands the daemon are resolved by the system's resolver, which
/// only a real network answers — so these stay in a namespace, where no resolver is
/// reached and the failure comes at once. The rest of what the daemon serves is
/// tested as any user in ReachdProgramTests (ClientAPITests, DaemonServingTests).
@Suite("Host names through reachd (binary, network namespaces)", .needsRoot, .ownThreads)
struct HostNameTests {
    @Test("Route() of a name that does not resolve fails saying so")
    func unresolvableRoute() async throws {
        try await DaemonProcess.serving(in: "rdnoroute") { daemon, namespace in
            // With no route the resolver fails at once, whatever resolv.conf names.
            try namespace.ip("route del default")
            let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]
            let unknown = try daemon.busctl(["call"] + object + ["Route", "s", "no-such-host.invalid"], check: false)
            #expect(unknown.status != 0 && unknown.error.contains("cannot resolve"), "\(unknown.error)")
        }
    }

    @Test("ReachabilityCompat: a host that does not resolve reads as unknown within the manager's resolution timeout")
    func compatUnresolvableHost() async throws {
        try await DaemonProcess.serving(in: "rdnohost") { daemon, _ in
            let manager = NetworkReachabilityManager(
                host: "nonexistent.invalid", endpoint: .address(daemon.address),
                resolutionTimeout: .milliseconds(500))!
            #expect(manager.status == .unknown)
            #expect(manager.backend == .daemon)
        }
    }
}
