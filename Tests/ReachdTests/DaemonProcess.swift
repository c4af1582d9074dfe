import Foundation
import NamespaceTesting
import ReachabilityClient

#if canImport(Glibc)
import Glibc
#endif

/// reachd as a test runs it: the built binary inside a test namespace, its
/// private socket in a scratch directory, its log captured.
final class DaemonProcess: @unchecked Sendable {
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("reachd").path
    static let reachctl = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("reachctl").path

    let process = Process()
    let directory: URL
    let logFile: URL
    var socket: String { directory.appendingPathComponent("bus").path }
    var address: String { "unix:path=\(socket)" }

    /// Starts reachd in `namespace` with `arguments` after the socket and log level.
    /// `wrapper` runs reachd (it must exec it): `prlimit --nofile=…`.
    init(
        in namespace: TestNamespace, directory: URL, arguments: [String] = [], environment: [String: String] = [:],
        wrapper: [String] = []
    ) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        logFile = directory.appendingPathComponent("reachd-\(UUID()).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["ip", "netns", "exec", namespace.name] + wrapper + [
                Self.binary,
                "--socket", directory.appendingPathComponent("bus").path, "--log-level", "debug"
            ] + arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "NOTIFY_SOCKET")
        env.removeValue(forKey: "WATCHDOG_USEC")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: logFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Waits until the daemon answers on its private socket.
    func waitUntilServing(timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        let client = ReachabilityClient(endpoint: .address(address))
        while ContinuousClock.now < deadline {
            if (try? await client.currentPath()) != nil { return }
            guard process.isRunning else { throw DaemonFailure("reachd exited \(process.terminationStatus): \(log)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Once more after the deadline: a starved test task may wake only after it.
        if (try? await client.currentPath()) != nil { return }
        throw DaemonFailure("reachd did not answer within \(timeout): \(log)")
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// reachd's resident memory (VmRSS), in kB.
    var residentKilobytes: Int { status("VmRSS") }
    /// The part of it that is anonymous (RssAnon), in kB: what a leak grows. The file
    /// pages come and go with the page cache and the start-up release.
    var anonymousKilobytes: Int { status("RssAnon") }
    /// The part of it mapped from files (RssFile), in kB.
    var residentFileKilobytes: Int { status("RssFile") }

    private func status(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("\(field):") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Sends `number` and waits for the exit status (SIGKILL after `timeout`).
    @discardableResult
    func stop(_ number: Int32 = SIGTERM, timeout: Duration = .seconds(10)) async -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        // `ip netns exec` execs reachd: the pid is reachd's.
        signal(number)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { signal(SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// busctl against the private socket.
    @discardableResult
    func busctl(_ arguments: [String], check: Bool = true) throws -> CommandResult {
        try run(["busctl", "--address=\(address)"] + arguments, check: check)
    }
}

extension DaemonProcess {
    /// reachd on its private socket alone (`--bus none`, `config`), in namespace `label`
    /// with an uplink to a router namespace, once it serves; stopped, and waited for,
    /// before the namespaces go.
    static func serving(
        in label: String, config: String = "/dev/null",
        _ body: (DaemonProcess, TestNamespace) async throws -> Void
    ) async throws {
        try await withScratch { scratch in
            try await withNamespaces(label, "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config])
                do {
                    try await daemon.waitUntilServing()
                    try await body(daemon, ns[0])
                } catch {
                    await daemon.stop()
                    throw error
                }
                await daemon.stop()
            }
        }
    }
}

struct DaemonFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
