import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import ReachabilityClient
import Synchronization
import SystemCalls
import TestTraits
import Testing

/// A subscriber through a restart: reachd (`ServedDaemon`, as any user) stopped and a new
/// one started on the same socket and the same kernel, which changes while none runs.
@Suite("Subscribers through a daemon restart (embedded kernel)", .serialized, .ownThreads)
struct RestartTests {
    static let defaultRoute = EmbeddedKernel.Route.defaultRoute(via: IPAddress("10.1.0.1")!, interface: EmbeddedKernel.uplink)

    /// A kernel with an uplink and a default route, and a config file and a socket in a scratch
    /// directory; `body` starts a daemon on them with `start`, and again after stopping it.
    /// The last one started is stopped afterwards, whatever `body` did.
    static func restarting(
        _ body: (_ kernel: EmbeddedKernel, _ scratch: URL, _ start: () throws -> ServedDaemon) async throws -> Void
    ) async throws {
        try await withScratch { scratch in
            let kernel = EmbeddedKernel()
            kernel.addLoopback()
            kernel.addUplink(subnet: "10.1.0")
            let (config, socket) = (scratch.appendingPathComponent("reachd.toml").path, scratch.appendingPathComponent("bus").path)
            try ServedDaemon.isolated("").write(toFile: config, atomically: true, encoding: .utf8)
            var last: ServedDaemon?
            let start = {
                let daemon = try ServedDaemon(kernel: kernel, config: config, socket: socket)
                last = daemon
                return daemon
            }
            do {
                try await body(kernel, scratch, start)
            } catch {
                await last?.stop()
                throw error
            }
            await last?.stop()
        }
    }

    @Test("a ReachabilityClient subscriber and reachctl watch carry on through a restart and see the next change")
    func restart() async throws {
        try await Self.restarting { kernel, _, start in
            var daemon = try start()
            let client = ReachabilityClient(
                endpoint: .address(daemon.address), reconnectDelays: (.milliseconds(50), .milliseconds(400)))
            let seen = Mutex<[Path]>([])
            let token = client.onChange(queue: .global()) { path in seen.withLock { $0.append(path) } }
            defer { client.cancel(token) }
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: ServedDaemon.reachctl)
            watch.arguments = ["watch", "--json", "--bus", daemon.socket]
            let output = Pipe()
            watch.standardOutput = output
            try watch.run()
            defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
            let lines = Mutex<[String]>([])
            Thread.detachNewThread {
                let handle = output.fileHandleForReading
                var pending = Data()
                while case let chunk = handle.availableData, !chunk.isEmpty {
                    pending += chunk
                    while let newline = pending.firstIndex(of: 10) {
                        lines.withLock { $0.append(String(decoding: pending[..<newline], as: UTF8.self)) }
                        pending = pending[(newline + 1)...]
                    }
                }
            }
            #expect(await eventually { seen.withLock { $0.count } == 1 && lines.withLock { $0.count } == 1 })
            #expect(seen.withLock { $0.first?.initial } == true)
            #expect(seen.withLock { $0.first?.status } == .wired)
            #expect(lines.withLock { $0.first?.contains("\"source\":\"daemon\"") } == true)

            // The daemon goes away; the network changes meanwhile; a new daemon comes.
            await daemon.stop()
            kernel.deleteRoute(Self.defaultRoute)
            daemon = try start()
            #expect(await eventually { seen.withLock { $0.last?.status } == .unreachable }, "the change made while no daemon ran")
            #expect(await eventually { lines.withLock { $0.last?.contains("\"status\":\"unreachable\"") } == true })

            // And the next change, from the new daemon.
            kernel.addRoute(Self.defaultRoute)
            #expect(await eventually { seen.withLock { $0.last?.status } == .wired })
            #expect(await eventually { lines.withLock { $0.last?.contains("\"status\":\"wired\"") } == true })
            #expect(seen.withLock { $0.dropFirst().allSatisfy { !$0.initial } })
            kill(watch.processIdentifier, SIGTERM)
            watch.waitUntilExit()
            #expect(watch.terminationStatus == 0)
        }
    }

    @Test("reachctl watch --json prints nothing for a new daemon on the same path, then its next change once")
    func restartOnTheSamePath() async throws {
        try await Self.restarting { kernel, scratch, start in
            var daemon = try start()
            let watch = try ContainerHostTests.Recorder(
                "watch", [ServedDaemon.reachctl, "watch", "--json", "--bus", daemon.socket], in: scratch)
            defer { watch.stop() }
            #expect(await eventually { watch.lines.count == 1 }, "\(watch.stderr)")
            await daemon.stop()
            daemon = try start()
            // The new daemon's document has a `since` of its own; its path is the one printed.
            #expect(await eventually { await daemon.held().connections == 1 }, "\(watch.stderr)")
            try await Task.sleep(for: .milliseconds(500))
            #expect(watch.lines.count == 1, "\(watch.lines)")

            kernel.deleteRoute(Self.defaultRoute)
            #expect(await eventually { watch.lines.count == 2 }, "\(watch.lines)")
            #expect(watch.lines.last?.contains("\"status\":\"unreachable\"") == true, "\(watch.lines)")
            #expect(watch.lines.last?.contains("\"initial\":false,") == true, "\(watch.lines)")
        }
    }
}
