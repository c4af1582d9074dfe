import Foundation
import NamespaceTesting
import ReachabilityClient
import ReachdVersion
import TestTraits
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("reachd (binary, network namespaces, private socket)", .serialized, .needsRoot, .ownThreads)
struct DaemonTests {
    let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]

    func property(_ daemon: DaemonProcess, _ name: String) throws -> String {
        try daemon.busctl(["get-property"] + object + [name]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("properties follow route deletion and addition, read with busctl and with ReachabilityClient")
    func propertiesFollowRoutes() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdprops", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", "/nonexistent"])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(try property(daemon, "Status") == "s \"wired\"")
                #expect(try property(daemon, "Interface") == "s \"eth0\"")
                let client = ReachabilityClient(endpoint: .address(daemon.address))
                #expect(try await client.currentPath().source == .daemon)

                try ns[0].ip("route del default")
                #expect(try await eventually { try property(daemon, "Status") == "s \"unreachable\"" })
                #expect(try property(daemon, "Reason") == "s \"no-route\"")
                #expect(try await client.currentPath().reason == .noRoute)
                // (Names are resolved off the loop; with no route the resolver fails at once.)
                let unknown = try daemon.busctl(["call"] + object + ["Route", "s", "no-such-host.invalid"], check: false)
                #expect(unknown.status != 0 && unknown.error.contains("cannot resolve"), "\(unknown.error)")
                try ns[0].ip("route add default via 10.1.0.1")
                #expect(try await eventually { try property(daemon, "Status") == "s \"wired\"" })

                let route = try daemon.busctl(["call"] + object + ["Route", "s", "10.1.0.1"]).output
                #expect(route.contains("\\\"destination\\\":\\\"10.1.0.1\\\""), "\(route)")
                #expect(await daemon.stop() == 0, "SIGTERM exits 0")
            }
        }
    }

    @Test("reachctl status, route and wait go through the daemon; wait exits 0 when met, 1 on timeout")
    func reachctlThroughTheDaemon() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdctl", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", "/nonexistent"])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                let ctl = DaemonProcess.reachctl
                #expect(try ns[0].exec([ctl, "status", "--bus", daemon.socket]).output.contains("source:       daemon"))
                #expect(try ns[0].exec([ctl, "status", "--bus", daemon.socket, "--direct"]).output.contains("source:       direct"))
                #expect(try ns[0].exec([ctl, "route", "10.1.0.1", "--bus", daemon.socket, "--json"]).output.contains("\"source\":\"daemon\""))
                // Without a daemon at that address, the read-only commands compute the path themselves.
                #expect(try ns[0].exec([ctl, "status", "--bus", scratch.appendingPathComponent("nothing").path]).output.contains("source:       direct"))

                let met = try ns[0].exec([ctl, "wait", "--bus", daemon.socket, "--timeout", "5s"])
                #expect(met.status == 0, "already reachable: at once")
                let timedOut = try ns[0].exec([ctl, "wait", "--for", "unreachable", "--bus", daemon.socket, "--timeout", "300ms"], check: false)
                #expect(timedOut.status == 1)
                #expect(timedOut.error == "reachctl: waiting for unreachable: timed out after 300ms\n")

                // A waiter that is released by a change.
                let waiter = Process()
                waiter.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                waiter.arguments = ["ip", "netns", "exec", ns[0].name, ctl, "wait", "--for", "unreachable", "--bus", daemon.socket, "--timeout", "20s"]
                try waiter.run()
                try await Task.sleep(for: .milliseconds(300))
                #expect(waiter.isRunning)
                try ns[0].ip("route del default")
                #expect(await eventually { !waiter.isRunning })
                #expect(waiter.terminationStatus == 0)
            }
        }
    }

    @Test("Reload: denied to an unprivileged caller, allowed to root; a bad config keeps the old one")
    func reload() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdreload") { ns in
                let config = scratch.appendingPathComponent("reachd.toml")
                try "[monitor]\nignore = [\"docker*\"]\n".write(to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()

                let denied = try run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                      "busctl", "--address=\(daemon.address)", "call"] + object + ["Reload"], check: false)
                #expect(denied.status != 0)
                #expect(denied.error.contains("root only") || denied.error.contains("Access denied"), "\(denied.error)")
                let deniedCtl = try run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                         DaemonProcess.reachctl, "reload", "--bus", daemon.socket], check: false)
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

    @Test("a bad config at start fails with file:line — a misspelt table and a top-level key too; a missing one means defaults",
          arguments: [("[trust]\nrecheck = \"sometimes\"\n", "reachd.toml:2: recheck must be one of on-change, interval, both"),
                      ("[monitor]\n\n[conectivity]\nuri = \"http://192.0.2.1/\"\n", "reachd.toml:3: unknown table [conectivity]"),
                      ("foo = 1\n", "reachd.toml:1: unknown key 'foo' (every key belongs in a table)")])
    func badConfigAtStart(_ text: String, _ message: String) async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdbadcfg") { ns in
                let config = scratch.appendingPathComponent("reachd.toml")
                try text.write(to: config, atomically: true, encoding: .utf8)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                let status = await daemon.stop(0, timeout: .seconds(10))  // signal 0: just wait
                #expect(status == 1)
                #expect(daemon.log.contains(message), "\(daemon.log)")
            }
        }
    }

    @Test("the command line of docs/daemon.md: --help, and usage errors exit 64 naming the option")
    func commandLine() throws {
        let help = try run([DaemonProcess.binary, "--help"])
        #expect(help.output.hasPrefix("USAGE: reachd [--config <file>] [--bus <bus>] [--socket <path>] [--log-level <level>]\n"))
        for option in ["--config", "--bus", "--socket", "--log-level"] { #expect(help.output.contains("  \(option) <"), "\(option)") }
        for (arguments, message) in [(["--bogus"], "unknown option '--bogus'"), (["--config"], "missing value for '--config'"),
                                     (["--config="], "missing value for '--config'"), (["--bus", "--socket", "x"], "missing value for '--bus'"),
                                     (["--log-level=loud"], "--log-level must be one of error, warning, notice, info, debug, not 'loud'"),
                                     (["stray"], "unexpected argument 'stray'")] {
            let result = try run([DaemonProcess.binary] + arguments, check: false)
            #expect(result.status == 64 && result.error == "reachd: \(message) (see reachd --help)\n", "\(arguments): \(result.error)")
        }
    }

    @Test("reachd, reachctl and reachd-trust --version print the one version, the package's")
    func version() throws {
        let helper = URL(fileURLWithPath: DaemonProcess.binary).deletingLastPathComponent().appendingPathComponent("reachd-trust").path
        for binary in [DaemonProcess.binary, DaemonProcess.reachctl, helper] {
            #expect(try run([binary, "--version"]).output == reachdVersion + "\n", "\(binary)")
        }
        #expect(reachdVersion.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+/) != nil, "a Debian version: \(reachdVersion)")
        // make deb names the package after what the Makefile reads from the source.
        let makefile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        #expect(try run(["make", "-s", "-C", makefile.path, "version"]).output == reachdVersion + "\n")
    }

    @Test("READY=1 and STATUS= reach NOTIFY_SOCKET after the first path; WATCHDOG=1 when asked for")
    func notify() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdnotify") { ns in
                let path = scratch.appendingPathComponent("notify").path
                let receiver = try NotifyReceiver(path: path)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", "/nonexistent"],
                                               environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"])
                defer { Task { await daemon.stop() } }
                let messages = try await receiver.receive(until: { $0.contains("READY=1") })
                #expect(messages.contains { $0.contains("READY=1") && $0.contains("STATUS=unreachable (no-interface)") }, "\(messages)")
                _ = try await receiver.receive(until: { $0 == "WATCHDOG=1" })
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
