import EmbeddedKernel
import Foundation
import NamespaceTesting
import ReachabilityBus
import ReachabilityCore
import SDBus
import Synchronization

@testable import ReachdProgram

/// reachd as its clients meet it, in this process: a whole `Daemon` on an embedded
/// kernel, its sd-event loop on a thread of its own, serving its private socket in a
/// scratch directory as `reachd --bus none` does. Clients — `ReachabilityClient`,
/// ReachabilityCompat, `busctl`, `reachctl` — talk to it over the socket, as any user;
/// the test changes the network through `kernel`. Nothing is sent anywhere: no probe,
/// no captive-portal API, no trust helper, and the kernel is no kernel. The namespace
/// suites (ReachdTests) keep the built binary's own wiring.
final class ServedDaemon: Sendable {
    let kernel: EmbeddedKernel
    let socket: String
    var address: String { "unix:path=\(socket)" }

    private let mailbox: Mailbox<@Sendable (Daemon) -> Void>
    /// How the start went (nil while it goes on), and whether the thread has let everything go.
    private let started = Mutex<Result<Void, any Error>?>(nil)
    private let stopped = Mutex(false)

    /// Starts the daemon with the config file `config` (a missing file means defaults);
    /// returns once it serves `socket`, or throws what stopped it.
    private init(kernel: EmbeddedKernel, config: String, socket: String) throws {
        self.kernel = kernel
        self.socket = socket
        mailbox = try Mailbox()
        let thread = Thread { [self] in
            defer { stopped.withLock { $0 = true } }
            do {
                var configuration = try DaemonConfiguration.load(config, helper: nil)
                // Nothing learnt from the host this test runs on.
                configuration.connectivity.capport = .off
                configuration.connectivity.networkdLinks = nil
                let loop = try EventLoop()
                let daemon = try Daemon(
                    configFile: config, configuration: configuration, helper: nil, loop: loop,
                    kernel: .engines(on: kernel, loop: loop))
                let privateSocket = try PrivateSocket(path: socket)
                try privateSocket.serve(daemon.object, on: loop) { Log.warning($0) }
                let messages = try mailbox.deliver(on: loop) { posted in
                    for message in posted { message(daemon) }
                }
                daemon.publishCurrentPath()
                started.withLock { $0 = .success(()) }
                _ = try loop.run()
                withExtendedLifetime((privateSocket, messages)) {}
            } catch {
                started.withLock { $0 = .failure(error) }
            }
        }
        thread.start()
        while started.withLock({ $0 }) == nil { usleep(1000) }
        try started.withLock { $0 }!.get()
    }

    /// Runs `body` on the daemon's loop and returns what it returns.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable (Daemon) -> T) async -> T {
        await withCheckedContinuation { continuation in
            mailbox.post { continuation.resume(returning: body($0)) }
        }
    }

    /// A metric's value as a scrape would read it: the first sample of `name` whose labels include `labels`.
    func metric(_ name: String, _ labels: [String: String] = [:]) async -> Double? {
        await onLoop { daemon in
            daemon.metricsFamilies().first { $0.name == name }?.samples.first { sample in
                labels.allSatisfy { label in sample.labels.contains { $0.name == label.key && $0.value == label.value } }
            }?.value
        }
    }

    /// What the daemon holds for its clients: open connections, the `WatchPath()` watches, whether anyone watches interfaces.
    func held() async -> Held {
        await onLoop { daemon in
            Held(
                connections: daemon.object.connections.count { $0.isOpen }, watches: daemon.object.pathWatches,
                interfaces: daemon.object.hasInterfaceWatchers)
        }
    }

    struct Held: Equatable, Sendable {
        var connections: Int
        var watches: Set<String>
        var interfaces: Bool
    }

    /// Exits the loop and waits for the thread to let everything go (the socket file included).
    private func stop() async {
        mailbox.post { $0.loop.exit(0) }
        while !stopped.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// The daemon configured by `config` (TOML) on a kernel `setUp` prepared, for `body`;
    /// stopped, and waited for, afterwards.
    static func serving(
        config: String = "", _ setUp: (EmbeddedKernel) -> Void,
        _ body: (ServedDaemon) async throws -> Void
    ) async throws {
        try await withScratch { scratch in
            let file = scratch.appendingPathComponent("reachd.toml")
            try config.write(to: file, atomically: true, encoding: .utf8)
            let kernel = EmbeddedKernel()
            kernel.addLoopback()
            setUp(kernel)
            let daemon = try ServedDaemon(kernel: kernel, config: file.path, socket: scratch.appendingPathComponent("bus").path)
            do {
                try await body(daemon)
            } catch {
                await daemon.stop()
                throw error
            }
            await daemon.stop()
        }
    }

    /// busctl against the private socket.
    @discardableResult
    func busctl(_ arguments: [String], check: Bool = true) throws -> CommandResult {
        try run(["busctl", "--address=\(address)"] + arguments, check: check)
    }

    static let reachctl = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("reachctl").path
}
