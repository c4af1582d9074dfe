import Foundation
import TestTraits
import Testing

/// prometheus/reachd.rules.yml, as Prometheus itself reads and evaluates it.
@Suite("The alert rules", .ownThreads)
struct AlertRulesTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("prometheus")

    func promtool(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        process.arguments = arguments
        process.currentDirectoryURL = Self.directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test("promtool check rules")
    func check() throws {
        let result = try promtool(["check", "rules", "reachd.rules.yml"])
        #expect(result.status == 0 && result.output.contains("SUCCESS: 8 rules found"), "\(result.output)")
    }

    @Test("promtool test rules: each alert fires when it should and not before")
    func unitTests() throws {
        let result = try promtool(["test", "rules", "reachd.rules.test.yml"])
        #expect(result.status == 0 && result.output.contains("SUCCESS"), "\(result.output)")
    }
}
