import Foundation
import NamespaceTesting
import ReachabilityClient
import Synchronization
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// State, not history (docs/api.md, "What subscribers are sent"): coalescing is allowed, a stale last state is not. Every
/// kind of subscriber — `reachctl watch` and `ReachabilityClient` on the private
/// socket and on a bus broker, some paused while the kernel churns so that their
/// sockets fill — ends on the document `Describe()` answers, whatever the last
/// change was: the path, connectivity alone, or trust alone.
@Suite("the publish path converges", .serialized, .needsNamespaces, .ownThreads, .machineAlone)
struct PublishConvergenceTests {
    /// One `reachctl watch --json`, its lines in a file.
    final class Watcher {
        let process = Process()
        let file: URL
        let name: String

        init(_ name: String, endpoint: String, in directory: URL) throws {
            self.name = name
            file = directory.appendingPathComponent("watch-\(name).jsonl")
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: DaemonProcess.reachctl)
            process.arguments = ["watch", "--json", "--bus", endpoint]
            process.standardOutput = try FileHandle(forWritingTo: file)
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        var lines: [Substring] { ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n") }
        var last: Path? { lines.last.flatMap { try? JSONDecoder().decode(Path.self, from: Data($0.utf8)) } }
        func pause() { kill(process.processIdentifier, SIGSTOP) }
        func resume() { kill(process.processIdentifier, SIGCONT) }

        func stop() {
            resume()
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// An in-process `ReachabilityClient`: its `paths` stream and an `onChange` callback.
    final class InProcess: Sendable {
        final class Latest: Sendable {
            private let value = Mutex<Path?>(nil)
            var path: Path? { value.withLock { $0 } }
            func set(_ path: Path) { value.withLock { $0 = path } }
        }

        let client: ReachabilityClient
        let fromStream = Latest()
        let fromCallback = Latest()
        let task: Task<Void, Never>
        let token: Int

        init(address: String) {
            let client = ReachabilityClient(endpoint: .address(address))
            self.client = client
            let fromStream = fromStream
            task = Task.detached {
                for await path in client.paths { fromStream.set(path) }
            }
            let fromCallback = fromCallback
            token = client.onChange(queue: DispatchQueue(label: "convergence")) { fromCallback.set($0) }
        }

        func stop() {
            task.cancel()
            client.cancel(token)
        }
    }

    /// 1,500 changes in one go: the route, the address and the link bounce, as
    /// fast as `ip -batch` makes them (enough to overrun netlink now and then and
    /// to fill a paused subscriber's socket), ending with the default route there or not
    /// (`ip -force` goes on past the commands the kernel refuses: a route on a link that is down).
    static func burst(_ namespace: TestNamespace, routeAtEnd: Bool) throws {
        // The previous burst's /32s go first, so that this one changes the document again.
        var commands = (0..<250).map { "addr del 10.9.\($0 / 250).\($0 % 250 + 1)/32 dev eth0" }
        for round in 0..<250 {
            commands += [
                "route del default", "addr del 10.1.0.2/24 dev eth0", "addr add 10.1.0.2/24 dev eth0",
                "link set dev eth0 down", "link set dev eth0 up", "addr add 10.9.\(round / 250).\(round % 250 + 1)/32 dev eth0",
                "route add default via 10.1.0.1 dev eth0"
            ]
        }
        if !routeAtEnd { commands.append("route del default") }
        _ = try run(["ip", "-n", namespace.name, "-force", "-batch", "-"], check: false, input: commands.joined(separator: "\n") + "\n")
    }

    @Test(
        "every subscriber ends on Describe(): after a path change, a connectivity-only change and a trust-only change, through bursts with paused readers",
        .timeLimit(.minutes(5)), .needsSystemBusName)
    func convergence() async throws {
        try await withScratch { scratch in
            chmod(scratch.path, 0o755)
            try PinnedServer.makePKI(in: scratch)
            let config = try PinnedServer.config(pins: try PinnedServer.pins(in: scratch), in: scratch)
            let handle = try FileHandle(forWritingTo: config)
            handle.seekToEndOfFile()
            handle.write(Data(ConnectivityTests.connectivity(uri: "http://10.1.0.1/generate_204", interval: "10s").utf8))
            handle.write(Data("\n[metrics]\nlisten = \"127.0.0.1:9748\"\n".utf8))
            try handle.close()
            let bus = try TestSystemBus(directory: scratch)
            defer { bus.stop() }
            try await withNamespaces("rdconv", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let http = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "204")
                defer { http.stop() }
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--config", config.path, "--bus", bus.address])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                let describe = { ConnectivityTests.path(daemon) }
                #expect(await eventually(.seconds(20)) { describe()?.connectivity == .full })

                let watchers = try [
                    Watcher("socket", endpoint: daemon.socket, in: scratch),
                    Watcher("socket-paused", endpoint: daemon.socket, in: scratch),
                    Watcher("bus", endpoint: bus.address, in: scratch),
                    Watcher("bus-paused", endpoint: bus.address, in: scratch)
                ]
                defer { watchers.forEach { $0.stop() } }
                let inProcess = [InProcess(address: daemon.address), InProcess(address: bus.address)]
                defer { inProcess.forEach { $0.stop() } }
                #expect(await eventually { watchers.allSatisfy { !$0.lines.isEmpty } })
                let paused = watchers.filter { $0.name.hasSuffix("paused") }

                /// Every subscriber's last path is the one `Describe()` answers, within 5 s of the
                /// kernel going quiet (of being resumed, for the paused ones). Describe() is asked
                /// again at every look: a loaded machine's debug reachd may still be working
                /// through a burst's messages when this starts (in CI it once answered a path of
                /// the burst's middle, which every subscriber had rightly left by the end). A lost
                /// change never converges.
                func expectConverged(_ kind: String, sourceLocation: SourceLocation = #_sourceLocation) async {
                    var want: Path?
                    func holds(_ path: Path?) -> Bool {
                        guard let path, let want else { return false }
                        return path.isSamePath(as: want)
                    }
                    let converged = await eventually(.seconds(5)) {
                        want = describe()
                        return watchers.allSatisfy { holds($0.last) }
                            && inProcess.allSatisfy { holds($0.fromStream.path) && holds($0.fromCallback.path) }
                    }
                    let stale =
                        watchers.filter { !holds($0.last) }.map { "\($0.name): \(PathSummary.of($0.last))" }
                        + inProcess.enumerated().flatMap { index, client in
                            [("stream", client.fromStream.path), ("onChange", client.fromCallback.path)]
                                .filter { !holds($0.1) }.map { "client \(index) \($0.0): \(PathSummary.of($0.1))" }
                        }
                    #expect(
                        converged,
                        "\(kind): stale subscribers \(stale); daemon \(PathSummary.of(want)); \(daemon.log.suffix(1500))",
                        sourceLocation: sourceLocation)
                }

                // 1. The last change is the path: the default route goes. reachd itself is
                // stopped through two bursts, so that the kernel overruns its netlink socket.
                func overruns() -> Double { metricValue("reachd_netlink_overruns_total", in: ns[0].scrapeMetrics()) ?? -1 }
                #expect(overruns() == 0)
                paused.forEach { $0.pause() }
                daemon.signal(SIGSTOP)
                try Self.burst(ns[0], routeAtEnd: true)
                try Self.burst(ns[0], routeAtEnd: false)
                daemon.signal(SIGCONT)
                #expect(await eventually { describe()?.status == .unreachable })
                #expect(await eventually { overruns() > 0 }, "the bursts must overrun reachd's netlink socket")
                try await Task.sleep(for: .milliseconds(600)) // the IPv4 re-checks after a removal
                paused.forEach { $0.resume() }
                await expectConverged("path")

                // 2. The last change is connectivity alone: the route comes back behind a
                // captive portal; once everything else settled, the portal lets the probe
                // through (trust stays unknown throughout: its server is down).
                try http.set("redirect")
                paused.forEach { $0.pause() }
                try Self.burst(ns[0], routeAtEnd: true)
                #expect(await eventually(.seconds(20)) { describe()?.connectivity == .portal })
                // The burst's last addresses may still be on their way (a busy machine, the link-local's DAD): the change
                // that follows must be connectivity alone, so the document holds all of them first.
                #expect(
                    await eventually(.seconds(20)) {
                        let addresses = describe()?.interfaces.first { $0.name == "eth0" }?.addresses ?? []
                        return addresses.filter { $0.hasPrefix("10.9.") }.count == 250 && addresses.contains("10.1.0.2/24")
                            && addresses.contains { $0.hasPrefix("fe80:") }
                    }, "\(PathSummary.of(describe()))")
                try await Task.sleep(for: .seconds(2)) // the trust rounds entering the portal starts
                // The reader that keeps up holds the portal before the portal lets go: one that is
                // still draining the burst's documents is rightly sent only the latest (on a busy
                // machine, 2 s were not always enough for a debug `reachctl watch`).
                #expect(
                    await eventually(.seconds(20)) { watchers[0].last?.connectivity == .portal },
                    "the reader that keeps up never held the portal: \(watchers[0].lines.suffix(3).map { $0.prefix(120) })")
                try http.set("204")
                try daemon.busctl([
                    "call", "io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1", "CheckConnectivity"
                ])
                #expect(await eventually(.seconds(20)) { describe()?.connectivity == .full })
                try await Task.sleep(for: .seconds(2)) // and the one leaving it
                paused.forEach { $0.resume() }
                await expectConverged("connectivity")
                let keepingUp = watchers[0].lines.suffix(2).compactMap { try? JSONDecoder().decode(Path.self, from: Data($0.utf8)) }
                #expect(
                    keepingUp.count == 2 && keepingUp[0].connectivity == .portal && keepingUp[1].connectivity == .full
                        && keepingUp[0].trust == keepingUp[1].trust && keepingUp[0].interfaces == keepingUp[1].interfaces,
                    "the last change was connectivity alone: \(keepingUp.map(PathSummary.init))")

                // 3. The last change is trust alone: the pinned server comes up, a recheck validates it.
                let tls = try await PinnedServer.serve(in: ns[1], from: scratch)
                defer { kill(tls.processIdentifier, SIGKILL); tls.waitUntilExit() }
                paused.forEach { $0.pause() }
                try daemon.busctl(["call", "io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1", "RecheckTrust"]
                )
                #expect(await eventually(.seconds(20)) { describe()?.trust == .ok }, "\(daemon.log.suffix(1500))")
                paused.forEach { $0.resume() }
                await expectConverged("trust")
                let last = watchers[0].last
                #expect(last?.trust == .ok && last?.connectivity == .full, "a trust-only change is a StatusChanged too")

                // 4. A subscriber that stops reading for longer than reachd waits is dropped;
                // resumed, it reconnects and converges.
                let socketPaused = watchers[1]
                socketPaused.pause()
                try Self.burst(ns[0], routeAtEnd: true)
                #expect(
                    await eventually(.seconds(20)) { daemon.log.contains("that does not read (behind for") }, "\(daemon.log.suffix(1500))")
                #expect(await eventually(.seconds(20)) { describe()?.connectivity == .full })
                try await Task.sleep(for: .seconds(2))
                socketPaused.resume()
                await expectConverged("after a drop")
            }
        }
    }
}

extension PublishConvergenceTests {
    /// The short form of `reachability-bench --only-soak 1` (BENCHMARKS.md): it
    /// fails on a subscriber left on a stale state and on anything reachd keeps.
    @Test(
        "soak: 20,000 changes with a probe, a pinned host, scrapes and a paused subscriber; every subscriber converges, nothing leaks",
        .timeLimit(.minutes(5)))
    func soak() async throws {
        let result = try await DaemonSoak(
            changes: 20_000, warmUpChanges: 4_000, reachd: DaemonProcess.binary,
            reachctl: DaemonProcess.reachctl
        ).run()
        print(
            "soak: \(result.changes) changes in \(result.churnSeconds) s, \(result.scrapes) scrapes, \(result.overruns) overruns; warm \(result.warm); end \(result.end); "
                + "settled \(result.settleMilliseconds) ms after the last change; "
                + result.subscribers.map {
                    "\($0.name) \($0.documents) documents, last state after \($0.lastStateMilliseconds.map { "\($0) ms" } ?? "never")"
                }.joined(separator: "; "))
        #expect(result.converged, "a subscriber was left on a stale state: \(result.subscribers)")
        #expect(result.end.anonymousKiB - result.warm.anonymousKiB < 1024, "anonymous memory grew: \(result.warm) → \(result.end)")
        #expect(result.end.descriptors == result.warm.descriptors, "descriptors: \(result.warm) → \(result.end)")
        #expect(result.end.threads <= result.warm.threads, "threads: \(result.warm) → \(result.end)")
        #expect(result.scrapes > 0)
        #expect(result.overruns > 0, "the stopped bursts must overrun reachd's netlink socket")
    }
}

/// What a failure message shows of a path.
struct PathSummary: CustomStringConvertible {
    let path: Path
    init(_ path: Path) { self.path = path }
    static func of(_ path: Path?) -> String { path.map { "\(PathSummary($0))" } ?? "none" }
    var description: String {
        "\(path.status.rawValue)/\(path.connectivity.rawValue)/trust \(path.trust.rawValue)/\(path.interfaces.flatMap(\.addresses).count) addresses"
    }
}
