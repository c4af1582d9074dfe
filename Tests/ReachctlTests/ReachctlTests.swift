import Foundation
import NamespaceTesting
import Synchronization
import Testing

/// reachctl as a user runs it: the built binary, inside a test namespace.
@Suite("reachctl (binary, network namespaces)")
struct ReachctlTests {
    /// The reachctl built beside the test bundle.
    static let reachctl = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("reachctl").path

    func json(_ line: Substring) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
    }

    @Test("status --json and the human form")
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
            #expect(human.contains("status:      wired"))
            #expect(human.contains("interface:   eth0 (veth)"))
            try ns[0].ip("link set dev eth0 down")
            let down = try ns[0].exec([Self.reachctl, "status"])
            #expect(down.status == 0, "status exits 0 whatever the status")
            #expect(down.output.contains("status:      unreachable (link-down)"))
        }
    }

    @Test("route: 0 with a path, 1 without")
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
        }
    }

    @Test("a bad config is one line on stderr with file:line")
    func badConfig() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID()).toml").path
        try "[monitor]\nprobe-ipv4 = \"nonsense\"\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try run([Self.reachctl, "status", "--config", file], check: false)
        #expect(result.status == 1)
        #expect(result.error == "reachctl: reading \(file): \(file):2: probe-ipv4 must be an IPv4 address, not \"nonsense\"\n")
        #expect(result.output.isEmpty)
    }

    @Test("watch --json: the current path, then one line per change, exit 0 on SIGTERM")
    func watch() async throws {
        try await withNamespaces("ctlwatch", "router") { ns in
            try ns[0].addUplink(router: ns[1])
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["ip", "netns", "exec", ns[0].name, Self.reachctl, "watch", "--json"]
            let output = Pipe()
            process.standardOutput = output
            let lines = Mutex<[String]>([])
            let buffer = Mutex(Data())
            output.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                buffer.withLock { pending in
                    pending.append(data)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[pending.startIndex ..< newline], as: UTF8.self)
                        pending.removeSubrange(pending.startIndex ... newline)
                        lines.withLock { $0.append(line) }
                    }
                }
            }
            try process.run()
            func waitForLines(_ count: Int) async throws {
                for _ in 0 ..< 1000 where lines.withLock({ $0.count }) < count {
                    try await Task.sleep(for: .milliseconds(10))
                }
                try #require(lines.withLock { $0.count } >= count, "got \(lines.withLock { $0 })")
            }
            try await waitForLines(1)
            try ns[1].ip("link set dev up0 down")
            try await waitForLines(2)
            try ns[1].ip("link set dev up0 up")
            try await waitForLines(3)
            try await Task.sleep(for: .milliseconds(200))
            process.terminate()
            process.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
            #expect(process.terminationReason == .exit)
            #expect(process.terminationStatus == 0)
            let documents = try lines.withLock { $0 }.map { try json(Substring($0)) }
            #expect(documents.map { $0["status"] as? String } == ["wired", "unreachable", "wired"])
            #expect(documents.map { $0["initial"] as? Bool } == [true, false, false])
            #expect(documents[1]["reason"] as? String == "no-carrier")
        }
    }
}
