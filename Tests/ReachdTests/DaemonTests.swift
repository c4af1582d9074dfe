import Foundation
import NamespaceTesting
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The daemon binary's own wiring, in network namespaces: who may reload it, and what
/// systemd hears. What it serves as the kernel moves is in ReachdProgramTests
/// (DaemonServingTests, ClientAPITests), as any user.
@Suite("reachd (binary, network namespaces, private socket)", .serialized, .needsNamespaces, .ownThreads)
struct DaemonTests {
    let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]

    func property(_ daemon: DaemonProcess, _ name: String) throws -> String {
        try daemon.busctl(["get-property"] + object + [name]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(
        "Reload: denied to an unprivileged caller, allowed to root; a bad config keeps the old one",
        .needsRoot("an unprivileged caller beside root"))
    func reload() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdreload") { ns in
                let config = scratch.appendingPathComponent("reachd.toml")
                try "[monitor]\nignore = [\"docker*\"]\n".write(to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()

                let denied = try run(
                    [
                        "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "busctl", "--address=\(daemon.address)", "call"
                    ] + object + ["Reload"], check: false)
                #expect(denied.status != 0)
                #expect(denied.error.contains("root only") || denied.error.contains("Access denied"), "\(denied.error)")
                let deniedCtl = try run(
                    [
                        "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        DaemonProcess.reachctl, "reload", "--bus", daemon.socket
                    ], check: false)
                #expect(deniedCtl.status == 1)
                #expect(deniedCtl.error == "reachctl: reload: Reload is for root only (AccessDenied)\n")

                try daemon.busctl(["call"] + object + ["Reload"])
                #expect(daemon.log.contains("reloaded \(config.path)"))

                // A bad config: Reload fails with file:line, SIGHUP logs it; the daemon carries on.
                try "[monitor]\nignore = 5\n".write(to: config, atomically: true, encoding: .utf8)
                let refused = try run([DaemonProcess.reachctl, "reload", "--bus", daemon.socket], check: false)
                #expect(refused.status == 1)
                #expect(refused.error.contains("reachd.toml:2: ignore must be an array of strings"), "\(refused.error)")
                // The [trust] table is read by reachd-trust; its file:line reaches the caller too.
                try "[trust]\ntimeout = \"soon\"\n".write(to: config, atomically: true, encoding: .utf8)
                let refusedTrust = try run([DaemonProcess.reachctl, "reload", "--bus", daemon.socket], check: false)
                #expect(refusedTrust.status == 1)
                #expect(refusedTrust.error.contains("reachd.toml:2: timeout must be a duration"), "\(refusedTrust.error)")
                // A misspelt table is refused like a bad key, not ignored.
                try "[metrcs]\nlisten = \"127.0.0.1:9748\"\n".write(to: config, atomically: true, encoding: .utf8)
                let refusedTable = try run([DaemonProcess.reachctl, "reload", "--bus", daemon.socket], check: false)
                #expect(refusedTable.status == 1)
                #expect(refusedTable.error.contains("reachd.toml:1: unknown table [metrcs]"), "\(refusedTable.error)")
                daemon.signal(SIGHUP)
                #expect(await eventually { daemon.log.components(separatedBy: "previous configuration stays in force").count == 5 })
                #expect(try property(daemon, "Status").hasPrefix("s "), "still serving")
            }
        }
    }

    @Test("READY=1 and STATUS= reach NOTIFY_SOCKET after the first path; WATCHDOG=1 when asked for")
    func notify() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdnotify") { ns in
                let path = scratch.appendingPathComponent("notify").path
                let receiver = try NotifyReceiver(path: path)
                let daemon = try DaemonProcess(
                    in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", "/nonexistent"],
                    environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"])
                defer { Task { await daemon.stop() } }
                let messages = try await receiver.receive(until: { $0.contains("READY=1") })
                #expect(messages.contains { $0.contains("READY=1") && $0.contains("STATUS=unreachable (no-interface)") }, "\(messages)")
                _ = try await receiver.receive(until: { $0 == "WATCHDOG=1" })
                #expect(await daemon.stop() == 0, "SIGTERM exits 0")
            }
        }
    }
}

/// A NOTIFY_SOCKET: a datagram socket sd_notify writes to.
final class NotifyReceiver {
    let descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path.utf8)
            bytes[path.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw DaemonFailure("binding \(path): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func receive(until done: (String) -> Bool, timeout: Duration = .seconds(20)) async throws -> [String] {
        var messages: [String] = []
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Checked once more after the deadline: a starved test task may wake only after it.
        var last = false
        while !last {
            last = ContinuousClock.now >= deadline
            let count = recv(descriptor, &buffer, buffer.count, last ? Int32(MSG_DONTWAIT) : 0)
            if count > 0 {
                let message = String(decoding: buffer[..<count], as: UTF8.self)
                messages.append(message)
                if done(message) { return messages }
                last = false
            } else {
                await Task.yield()
            }
        }
        throw DaemonFailure("no matching notification within \(timeout): \(messages)")
    }
}
