import Foundation
import NamespaceTesting
import Synchronization
import TestTraits
import Testing

/// reachctl as a user runs it: the built binary, inside a test namespace (root), or as
/// any user where it reads only its config.
@Suite("reachctl (binary, network namespaces)", .ownThreads)
struct ReachctlTests {
    /// The reachctl built beside the test bundle.
    static let reachctl = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("reachctl").path

    func json(_ line: Substring) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
    }

    @Test("status --json and the human form", .needsNamespaces)
    func status() async throws {
        try await withNamespaces("ctlstatus", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let result = try ns[0].exec([Self.reachctl, "status", "--json", "--direct"])
            let lines = result.output.split(separator: "\n")
            #expect(lines.count == 1)
            let document = try json(lines[0])
            #expect(document["status"] as? String == "wired")
            #expect(document["source"] as? String == "direct")
            #expect(document["initial"] as? Bool == true)
            #expect(document["gateway"] as? String == "10.1.0.1")
            let human = try ns[0].exec([Self.reachctl, "status"]).output
            #expect(human.contains("status:       wired"))
            // Without a daemon at that address, the read-only commands compute the path themselves.
            #expect(try ns[0].exec([Self.reachctl, "status", "--bus", "/nonexistent/bus"]).output.contains("source:       direct"))
            #expect(human.contains("interface:    eth0 (veth)"))
            try ns[0].ip("link set dev eth0 down")
            let down = try ns[0].exec([Self.reachctl, "status"])
            #expect(down.status == 0, "status exits 0 whatever the status")
            #expect(down.output.contains("status:       unreachable (link-down)"))
        }
    }

    @Test("route: 0 with a path, 1 without", .needsNamespaces)
    func route() async throws {
        try await withNamespaces("ctlroute", "router") { ns in
            try ns[0].addUplink(router: ns[1], defaultRoute: false)
            try ns[0].ip("route add 10.9.0.0/16 via 10.1.0.1 dev eth0")
            let found = try ns[0].exec([Self.reachctl, "route", "10.9.1.1"])
            #expect(found.output.contains("10.9.1.1 wired dev eth0 via 10.1.0.1 src 10.1.0.2"))
            let json = try ns[0].exec([Self.reachctl, "route", "10.9.1.1", "--json"]).output
            #expect(try self.json(json.split(separator: "\n")[0])["destination"] as? String == "10.9.1.1")
            let missing = try ns[0].exec([Self.reachctl, "route", "203.0.113.9"], check: false)
            #expect(missing.status == 1)
            #expect(missing.output.contains("unreachable (no-route)"))
            let unresolvable = try ns[0].exec([Self.reachctl, "route", "no-such-host.invalid"], check: false)
            #expect(unresolvable.status == 1)
            #expect(
                unresolvable.error.hasPrefix("reachctl: looking up the route to no-such-host.invalid: cannot resolve no-such-host.invalid"))
        }
    }

    @Test("a bad config is one line on stderr with file:line")
    func badConfig() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID()).toml").path
        try "[monitor]\nprobe-ipv4 = \"nonsense\"\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try run([Self.reachctl, "status", "--config", file], check: false)
        #expect(result.status == 1)
        #expect(result.error == "reachctl: \(file):2: probe-ipv4 must be an IPv4 address, not \"nonsense\"\n")
        #expect(result.output.isEmpty)
    }

    /// Without a daemon, `watch` computes the path here and keeps looking for one; `--direct`
    /// never looks, and prints from the monitor's own thread: also as a release build runs it,
    /// loading its wake-up's lines at every wake-up (WakeLinesTests).
    @Test(
        "watch --json: the current path, then one line per change, exit 0 on SIGTERM", .needsNamespaces,
        arguments: [([], false), (["--direct"], false), (["--direct"], true)])
    func watch(flags: [String], wakeLines: Bool) async throws {
        guard wakeLines else { return try await watch(Self.reachctl, flags: flags) }
        try await WakeLinesTests.withWrittenCopy { copy, _ in
            #expect(try WakeLinesTests.table(of: copy)[1] > 0)
            try await watch(copy, flags: flags)
        }
    }

    func watch(_ reachctl: String, flags: [String]) async throws {
        try await withNamespaces("ctlwatch", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["ip", "netns", "exec", ns[0].name, reachctl, "watch", "--json"] + flags
            let output = Pipe()
            process.standardOutput = output
            let lines = Mutex<[String]>([])
            let buffer = Mutex(Data())
            output.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                buffer.withLock { pending in
                    pending.append(data)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                        pending.removeSubrange(pending.startIndex...newline)
                        lines.withLock { $0.append(line) }
                    }
                }
            }
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer {
                // Never leave a watcher behind, whatever happened: it holds pipes open.
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
                output.fileHandleForReading.readabilityHandler = nil
            }
            func documents() throws -> [[String: Any]] {
                try lines.withLock { $0 }.map { try json(Substring($0)) }
            }
            /// Waits for a document with `status` after the first `after` documents.
            func waitForStatus(_ status: String, after: Int) async throws -> Int {
                for _ in 0..<1000 {
                    let all = try documents()
                    if let index = all.indices.dropFirst(after).first(where: { all[$0]["status"] as? String == status }) {
                        return index
                    }
                    try await Task.sleep(for: .milliseconds(10))
                }
                throw WatchTimeout(status: status, lines: lines.withLock { $0 })
            }
            let first = try await waitForStatus("wired", after: 0)
            try ns[1].ip("link set dev up0 down")
            let lost = try await waitForStatus("unreachable", after: first + 1)
            try ns[1].ip("link set dev up0 up")
            _ = try await waitForStatus("wired", after: lost + 1)
            process.terminate()
            process.waitUntilExit()
            #expect(process.terminationReason == .exit)
            #expect(process.terminationStatus == 0)
            let all = try documents()
            // Other documents may come between (an IPv6 address finishing DAD changes "interfaces").
            var statuses: [String] = []
            for document in all {
                if let status = document["status"] as? String, statuses.last != status { statuses.append(status) }
            }
            #expect(statuses == ["wired", "unreachable", "wired"])
            #expect(all.map { $0["initial"] as? Bool } == [true] + Array(repeating: false, count: all.count - 1))
            #expect(Set(lines.withLock { $0 }).count == all.count, "no document is repeated")
            #expect(all[lost]["reason"] as? String == "no-carrier")
            #expect(all.allSatisfy { $0["source"] as? String == "direct" })
        }
    }
}

struct WatchTimeout: Error, CustomStringConvertible {
    var status: String
    var lines: [String]
    var description: String { "no \(status) document from reachctl watch; got:\n\(lines.joined(separator: "\n"))" }
}
