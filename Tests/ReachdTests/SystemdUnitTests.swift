import Foundation
import NamespaceTesting
import TestTraits
import Testing

@Suite("systemd/ units", .ownThreads)
struct SystemdUnitTests {
    static let systemd = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("systemd")

    @Test("reachd.service scores 1.5 or better in systemd-analyze security")
    func securityScore() throws {
        let result = try run(
            ["systemd-analyze", "security", "--offline=true", Self.systemd.appendingPathComponent("reachd.service").path], check: false)
        let line = try #require(result.output.split(separator: "\n").last { $0.contains("Overall exposure level") })
        // "…: 1.1 OK 🙂" in a UTF-8 locale, "…: 1.1 OK :-)" without one: the score is the first number after the name.
        let verdict = try #require(line.firstRange(of: "reachd.service: ")).upperBound
        let score = try #require(Double(line[verdict...].prefix { $0.isNumber || $0 == "." }))
        #expect(score <= 1.5, "\(line)")
    }

    @Test("the units pass systemd-analyze verify (with the built binaries in place of /usr/bin)")
    func verify() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("units-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var units: [String] = []
        for name in ["reachd.service", "reachd-wait-online.service"] {
            let text = try String(contentsOf: Self.systemd.appendingPathComponent(name), encoding: .utf8)
                .replacingOccurrences(of: "/usr/bin/reachd ", with: DaemonProcess.binary + " ")
                .replacingOccurrences(of: "/usr/bin/reachctl ", with: DaemonProcess.reachctl + " ")
            let unit = directory.appendingPathComponent(name).path
            try text.write(toFile: unit, atomically: true, encoding: .utf8)
            units.append(unit)
        }
        let result = try run(["systemd-analyze", "verify", "--man=no"] + units, check: false)
        #expect(result.status == 0, "\(result.error)\(result.output)")
        #expect(result.error.isEmpty, "\(result.error)")
    }
}
