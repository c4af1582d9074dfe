import Foundation
import NamespaceTesting
import ReachabilityClient
import Synchronization
import TestTraits
import Testing

@Suite("Subscribers through a daemon restart", .serialized, .needsRoot, .ownThreads)
struct RestartTests {
    @Test("a ReachabilityClient subscriber and reachctl watch carry on through a restart and see the next change")
    func restart() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdrestart", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let arguments = ["--bus", "none", "--config", "/nonexistent"]
                var daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: arguments)
                try await daemon.waitUntilServing()

                let client = ReachabilityClient(
                    endpoint: .address(daemon.address), reconnectDelays: (.milliseconds(50), .milliseconds(400)))
                let seen = Mutex<[Path]>([])
                let token = client.onChange(queue: .global()) { path in seen.withLock { $0.append(path) } }
                defer { client.cancel(token) }
                let watch = Process()
                watch.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                watch.arguments = ["ip", "netns", "exec", ns[0].name, DaemonProcess.reachctl, "watch", "--json", "--bus", daemon.socket]
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
                #expect(await daemon.stop() == 0)
                try ns[0].ip("route del default")
                daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: arguments)
                defer { Task { [daemon] in await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await eventually { seen.withLock { $0.last?.status } == .unreachable }, "the change made while no daemon ran")
                #expect(await eventually { lines.withLock { $0.last?.contains("\"status\":\"unreachable\"") } == true })

                // And the next change, from the new daemon.
                try ns[0].ip("route add default via 10.1.0.1")
                #expect(await eventually { seen.withLock { $0.last?.status } == .wired })
                #expect(await eventually { lines.withLock { $0.last?.contains("\"status\":\"wired\"") } == true })
                #expect(seen.withLock { $0.dropFirst().allSatisfy { !$0.initial } })
                kill(watch.processIdentifier, SIGTERM)
                watch.waitUntilExit()
                #expect(watch.terminationStatus == 0)
            }
        }
    }
}
