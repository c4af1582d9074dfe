import EmbeddedKernel
import Foundation
import IPAddresses
import NamespaceTesting
import ReachabilityBus
import ReachabilityCore
import SDBus
import Synchronization
import SystemCalls

@testable import ReachdProgram

/// reachd as its clients meet it, in this process: a whole `Daemon` on an embedded
/// kernel, its sd-event loop on a thread of its own, serving its private socket in a
/// scratch directory as `reachd --bus none` does. Clients — `ReachabilityClient`,
/// ReachabilityCompat, `busctl`, `reachctl` — talk to it over the socket, as any user;
/// the test changes the network through `kernel`. Nothing is sent anywhere: no probe,
/// no captive-portal API, and the kernel is no kernel; the trust helper runs only when
/// asked for, against servers on loopback. Its log is the test's to read (`log`). The
/// namespace suites keep the built binary's own wiring.
final class ServedDaemon: Sendable {
    let kernel: EmbeddedKernel
    /// The config file it reads at start and on each reload.
    let configFile: String
    /// What the daemon's resolver answers for the names `Route()` and `WatchPath()` are handed.
    let names: Names
    let socket: String
    var address: String { "unix:path=\(socket)" }

    private let mailbox: Mailbox<@Sendable (Daemon) -> Void>
    /// How the start went (nil while it goes on), and whether the thread has let everything go.
    private let started = Mutex<Result<Void, any Error>?>(nil)
    private let stopped = Mutex(false)

    /// Starts the daemon with the config file `config`;
    /// returns once it serves `socket`, or throws what stopped it. `stop()` it when done
    /// (`serving` does both around a test).
    init(kernel: EmbeddedKernel, names: Names = Names(), config: String, socket: String, trustHelper: Bool = false) throws {
        self.kernel = kernel
        self.configFile = config
        self.names = names
        self.socket = socket
        mailbox = try Mailbox()
        let thread = Thread { [self] in
            defer { stopped.withLock { $0 = true } }
            do {
                let log = daemonLog
                let helper = trustHelper ? TrustHelper(executable: Self.reachdTrust, log: log) : nil
                let configuration = try DaemonConfiguration.load(config, helper: helper)
                let loop = try EventLoop()
                let daemon = try Daemon(
                    configFile: config, configuration: configuration, helper: helper, loop: loop, log: log,
                    kernel: .engines(on: kernel, loop: loop), resolve: { names.resolve($0) })
                let privateSocket = try PrivateSocket(path: socket)
                try privateSocket.serve(daemon.object, on: loop) { [log] in log.warning($0) }
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

    /// What the daemon logged (every level, debug included), a line each, as `reachd: …` on stderr would say.
    var log: String { logged.withLock { $0 } }
    private let logged = Mutex("")
    private var daemonLog: Log {
        Log(threshold: .debug) { [weak self] _, line in self?.logged.withLock { $0 += line + "\n" } }
    }

    /// Exits the loop and waits for the thread to let everything go (the socket file included).
    func stop() async {
        names.answerSlowNames()
        mailbox.post { $0.loop.exit(0) }
        while !stopped.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// The daemon configured by `config` (TOML) on a kernel `setUp` prepared, for `body`;
    /// stopped, and waited for, afterwards.
    /// With `trustHelper`, the daemon runs the built reachd-trust for its config checks,
    /// rounds and report deliveries — which dial what the config names: loopback only.
    static func serving(
        config: String = "", names: Names = Names(), trustHelper: Bool = false, _ setUp: (EmbeddedKernel) -> Void,
        _ body: (ServedDaemon) async throws -> Void
    ) async throws {
        try await withScratch { scratch in
            let file = scratch.appendingPathComponent("reachd.toml")
            try isolated(config).write(to: file, atomically: true, encoding: .utf8)
            let kernel = EmbeddedKernel()
            kernel.addLoopback()
            setUp(kernel)
            let daemon = try ServedDaemon(
                kernel: kernel, names: names, config: file.path, socket: scratch.appendingPathComponent("bus").path,
                trustHelper: trustHelper)
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

    /// `config` (TOML) with nothing learnt from the host this test runs on: no captive-portal
    /// API from its networkd (a reload reads the file again, so the file says so).
    static func isolated(_ config: String) -> String {
        let connectivity = "[connectivity]\ncapport = \"off\"\nnetworkd-links = \"\"\n"
        guard config.contains("[connectivity]\n") else { return config + "\n" + connectivity }
        return config.replacingOccurrences(of: "[connectivity]\n", with: connectivity)
    }

    /// A reload, as SIGHUP asks it (the bus's `Reload()` is root's): what it came to.
    func reload() async -> Result<Void, any Error> {
        await withCheckedContinuation { continuation in
            mailbox.post { $0.reloadConfiguration { continuation.resume(returning: $0) } }
        }
    }

    static let reachctl = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("reachctl").path
    static let reachdTrust = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
        "reachd-trust"
    ).path

    /// The daemon's resolver, as a test sets it: the addresses of the names it knows,
    /// none for the rest (a name that does not resolve); a name under `slow.test` is
    /// answered only once `answerSlowNames()` is called, as a resolver that never
    /// hears back holds a lookup until its timeout.
    final class Names: Sendable {
        private let known: [String: [IPAddress]]
        private let slowAnswered = Mutex(false)
        private let waiting = Mutex(0)
        private let asked = Mutex<[String: Int]>([:])

        init(_ known: [String: [IPAddress]] = [:]) { self.known = known }

        func resolve(_ name: String) -> [IPAddress] {
            if name.hasSuffix(".slow.test") {
                waiting.withLock { $0 += 1 }
                while !slowAnswered.withLock({ $0 }) { usleep(10_000) }
                waiting.withLock { $0 -= 1 }
            }
            asked.withLock { $0[name, default: 0] += 1 }
            return known[name] ?? []
        }

        /// How many `slow.test` lookups wait for `answerSlowNames()` now.
        var waitingLookups: Int { waiting.withLock { $0 } }

        /// How many times `name` was answered.
        func answers(of name: String) -> Int { asked.withLock { $0[name] ?? 0 } }

        func answerSlowNames() { slowAnswered.withLock { $0 = true } }

        /// `slow.test` names wait again, until the next `answerSlowNames()`.
        func holdSlowNames() { slowAnswered.withLock { $0 = false } }
    }
}
