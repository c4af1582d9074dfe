import Foundation
import NamespaceTesting
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every local user can reach reachd over D-Bus: `BusFuzzer`'s bad input, from a fixed
/// seed, twice, on the private socket and on a system bus with the NetworkManager
/// surface. reachd must not crash, must not keep anything, and must go on answering another user.
/// The long run of BENCHMARKS.md is this test with `REACHD_BUS_FUZZ_MESSAGES` (and
/// `REACHD_BUS_FUZZ_SEED`) set.
@Suite("bad input over the bus", .serialized, .needsNamespaces, .ownThreads, .machineAlone)
struct BusFuzzTests {
    static let environment = ProcessInfo.processInfo.environment
    static let messages = Int(environment["REACHD_BUS_FUZZ_MESSAGES"] ?? "") ?? 5_000
    static let seed = UInt64(environment["REACHD_BUS_FUZZ_SEED"] ?? "") ?? 0x7265_6163_6864

    struct Footprint: CustomStringConvertible {
        /// Anonymous memory, what a leak grows: the file pages move with the page cache and reachd's release of its start-up pages.
        let anonymousKiB: Int
        let descriptors: Int
        var description: String { "anonymous \(anonymousKiB) KiB, \(descriptors) descriptors" }
    }

    static func footprint(_ daemon: DaemonProcess) -> Footprint {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.process.processIdentifier)/fd").count) ?? -1
        return Footprint(anonymousKiB: daemon.anonymousKilobytes, descriptors: descriptors)
    }

    /// Whether an ordinary user (nobody) is answered `Describe()` within 5 s on `address`.
    static func anotherUserServed(_ address: String, destination: String = "io.reachd.Reachability1") -> Bool {
        let call = try? run(
            [
                "timeout", "5", "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "busctl", "--address=\(address)",
                "call", destination, "/io/reachd/Reachability1", "io.reachd.Reachability1", "Describe"
            ], check: false)
        return call?.status == 0 && call?.output.contains("status") == true
    }

    /// The footprint once what the last messages started has ended (a `Route()` to a name
    /// waits for a resolver that never answers here): descriptors unchanged for 2 s, or 30 s.
    static func settled(_ daemon: DaemonProcess) async throws -> Footprint {
        let deadline = ContinuousClock.now + .seconds(30)
        var last = footprint(daemon), since = ContinuousClock.now
        while since.duration(to: .now) < .seconds(2), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            let now = footprint(daemon)
            if now.descriptors != last.descriptors { since = .now }
            last = now
        }
        return last
    }

    /// Fuzzes `socket` twice with the same seed, checking ten times along each pass. The
    /// second pass sends the same bytes: the allocator has reached its high-water mark
    /// for them in the first (1 MiB messages raise glibc's mmap threshold, and the heap
    /// keeps what it grew), so what grows again in the second is kept — a leak.
    static func fuzz(
        _ daemon: DaemonProcess, socket: String, isBus: Bool, surface: BusFuzzer.Surface, served address: String,
        label: String
    ) async throws {
        #expect(surface.methods.count >= 10 && surface.properties.count >= 20, "\(surface.methods.map(\.name)) \(surface.properties.count)")
        // reachd lets go of its start-up's pages and free heap 10 s after start (docs/development.md,
        // "Idle memory"): done between the passes, it would undo the first pass's high-water mark.
        #expect(await eventually(.seconds(30)) { daemon.log.contains("start-up settled") }, "\(daemon.log.suffix(2000))")
        let baseline = footprint(daemon)
        var after: [Footprint] = []
        for pass in 1...2 {
            let fuzzer = BusFuzzer(socket: socket, isBus: isBus, surface: surface, seed: seed)
            let started = ContinuousClock.now
            try await fuzzer.fuzz(messages: messages, every: max(1, messages / 10)) { sent in
                #expect(daemon.process.isRunning, "reachd exited after \(sent) messages: \(daemon.log.suffix(2000))")
                #expect(anotherUserServed(address), "another user was not answered after \(sent) messages")
                print("bus fuzz (\(label), pass \(pass)): \(sent) messages, \(footprint(daemon))")
            }
            let elapsed = started.duration(to: .now)
            after.append(try await settled(daemon))
            print(
                "bus fuzz (\(label), seed \(seed), pass \(pass)): \(fuzzer.tally) in \(elapsed); before \(baseline), after \(after[pass - 1])"
            )
        }
        #expect(daemon.process.isRunning && anotherUserServed(address))
        // The first pass opens what reachd opens once (its Route() lookups' socket…); the second, nothing more.
        #expect(after[1].descriptors <= after[0].descriptors, "descriptors kept: \(baseline) → \(after[0]) → \(after[1])")
        #expect(
            after[1].anonymousKiB - after[0].anonymousKiB < 2048,
            "memory grew again in the second pass: \(baseline) → \(after[0]) → \(after[1])")
    }

    @Test(
        "the private socket: malformed authentication, corrupted and truncated messages, every method and property with wrong and absurd arguments, floods of watches, connections that never read — no crash, nothing kept, another user answered throughout",
        .timeLimit(.minutes(10)), .needsRoot("another user is answered throughout"))
    func privateSocket() async throws {
        try await DaemonProcess.serving(in: "rdfuzz") { daemon, _ in
            let surface = try BusFuzzer.Surface.discover(
                address: daemon.address, destination: "io.reachd.Reachability1",
                paths: ["/io/reachd/Reachability1"])
            try await Self.fuzz(
                daemon, socket: daemon.socket, isBus: false, surface: surface, served: daemon.address, label: "private socket")
        }
    }

    @Test(
        "a system bus with the NetworkManager surface: every method and property of both, wrong and absurd arguments, floods — no crash, nothing kept, another user answered throughout",
        .timeLimit(.minutes(10)), .needsSystemBusName)
    func systemBus() async throws {
        try await withScratch { scratch in
            let config = scratch.appendingPathComponent("reachd.toml")
            try NetworkManagerCompatTests.config(probe: false).write(to: config, atomically: true, encoding: .utf8)
            let bus = try TestSystemBus(directory: scratch, networkManagerCompat: true)
            defer { bus.stop() }
            try await withNamespaces("rdfuzzbus", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", bus.address, "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await eventually { (try? NetworkManagerCompatTests.nameHasOwner(bus)) == true }, "\(daemon.log)")
                let nmName = NetworkManagerCompatTests.nmName
                let nmPaths = try run(["busctl", "--address=\(bus.address)", "tree", "--list", nmName]).output
                    .split(separator: "\n").map(String.init).filter { $0.hasPrefix("/org/freedesktop/NetworkManager") }
                var surface = try BusFuzzer.Surface.discover(
                    address: bus.address, destination: "io.reachd.Reachability1",
                    paths: ["/io/reachd/Reachability1"])
                let nm = try BusFuzzer.Surface.discover(address: bus.address, destination: nmName, paths: nmPaths)
                #expect(nm.properties.count >= 10, "\(nmPaths)")
                surface.methods += nm.methods
                surface.properties += nm.properties
                try await Self.fuzz(daemon, socket: bus.socket, isBus: true, surface: surface, served: bus.address, label: "system bus")
                #expect((try? NetworkManagerCompatTests.nameHasOwner(bus)) == true, "reachd still owns the NetworkManager name")
            }
        }
    }
}
