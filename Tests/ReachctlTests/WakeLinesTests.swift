import Foundation
import NamespaceTesting
import TestTraits
import Testing

/// The wake-up's lines (docs/development.md, "The wake-up's lines"): what
/// `release/wake-lines.py write` puts in a program's table, and a reachctl that loads
/// them at every wake-up (the watch test runs one).
@Suite("the wake-up's lines (release/wake-lines.py, the built reachctl)", .ownThreads)
struct WakeLinesTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("release/wake-lines.py").path
    /// `PathWatcher.readable()`: a function of a name of its own, longer than two lines in any build.
    static let function = "$s16ReachabilityCore11PathWatcherC8readableyyF"

    /// A copy of the built reachctl with LIST written into its table (the committed list
    /// when nil), in a directory removed after `body`; `body` also gets what the script said.
    static func withWrittenCopy<T>(list: String? = nil, _ body: (String, CommandResult) async throws -> T) async throws -> T {
        try await withScratch { directory in
            let copy = directory.appendingPathComponent("reachctl").path
            try FileManager.default.copyItem(atPath: ReachctlTests.reachctl, toPath: copy)
            var arguments = ["/usr/bin/python3", script, "write", copy]
            if let list {
                let file = directory.appendingPathComponent("list").path
                try list.write(toFile: file, atomically: true, encoding: .utf8)
                arguments.append(file)
            }
            return try await body(copy, run(arguments))
        }
    }

    /// The table of `binary` as written: its magic word, its count, then the addresses.
    static func table(of binary: String) throws -> [UInt32] {
        let sections = try run(["readelf", "-SW", binary]).output.split(separator: "\n")
        let fields = try #require(sections.first { $0.contains(".reachd_wake_lines") })
            .split(separator: " ").drop { !$0.hasPrefix(".reachd_wake_lines") }
        let offset = try #require(UInt64(fields.dropFirst(3).first ?? "", radix: 16))
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: binary))
        defer { try? file.close() }
        try file.seek(toOffset: offset)
        let head = try #require(try file.read(upToCount: 8))
        let count = head.withUnsafeBytes { $0.load(fromByteOffset: 4, as: UInt32.self) }
        let lines = try #require(try file.read(upToCount: Int(count) * 4))
        return [head.withUnsafeBytes { $0.load(as: UInt32.self) }, count]
            + (0..<Int(count)).map { index in lines.withUnsafeBytes { $0.load(fromByteOffset: index * 4, as: UInt32.self) } }
    }

    @Test("a line is its symbol's address plus its offset, rounded down to its line; a gone symbol or a past offset is left out")
    func written() async throws {
        let symbols = try run(["nm", "-S", "--defined-only", ReachctlTests.reachctl]).output.split(separator: "\n")
        let fields = try #require(symbols.first { $0.hasSuffix(" \(Self.function)") }).split(separator: " ")
        let (address, size) = (try #require(UInt32(fields[0], radix: 16)), try #require(UInt32(fields[1], radix: 16)))
        try #require(size > 128)
        let list = """
            \(Self.function)\t\(String(size - 1, radix: 16)) 0 40 \(String(size + 0x40, radix: 16))
            $s16ReachabilityCore9NoSuchOneVMa\t0

            """
        try await Self.withWrittenCopy(list: list) { copy, said in
            #expect(said.error == "wake-lines.py: \(copy): 3 lines written, 2 stale left out\n")
            let expected = Set([address, address + 0x40, address + size - 1].map { $0 & ~63 }).sorted()
            let table = try Self.table(of: copy)
            #expect(table == [0x6b77_6472, UInt32(expected.count)] + expected)
        }
    }

    @Test("the committed list names lines the program holds")
    func committed() async throws {
        try await Self.withWrittenCopy { copy, said in
            let table = try Self.table(of: copy)
            #expect(table[0] == 0x6b77_6472)
            #expect(table[1] > 0, "\(said.error)")
            #expect(table.dropFirst(2).elementsEqual(table.dropFirst(2).sorted()))
        }
    }

    @Test("a list of which no line is in the program stops the build, the table left as it was")
    func allStale() async throws {
        try await Self.withWrittenCopy(list: "\(Self.function)\t0\n") { copy, _ in
            let before = try Self.table(of: copy)
            #expect(before[1] == 1)
            let stale = copy + ".stale"
            let list = "$s16ReachabilityCore9NoSuchOneVMa\t0 40\n\(Self.function)\t7fffffff\n"
            try list.write(toFile: stale, atomically: true, encoding: .utf8)
            let said = try run(["/usr/bin/python3", Self.script, "write", copy, stale], check: false)
            #expect(said.status == 1)
            #expect(said.error == "wake-lines.py: no line of \(stale) is in \(copy): regenerate it (release/wake-lines.sh)\n")
            #expect(try Self.table(of: copy) == before)
        }
    }

    @Test("a program without the table is refused, and left as it was")
    func withoutTable() async throws {
        try await withScratch { directory in
            let copy = directory.appendingPathComponent("true").path
            try FileManager.default.copyItem(atPath: "/bin/true", toPath: copy)
            let said = try run(["/usr/bin/python3", Self.script, "write", copy], check: false)
            #expect(said.status == 1)
            #expect(said.error == "wake-lines.py: \(copy) has no .reachd_wake_lines (a program linked without CWakeLines)\n")
            #expect(FileManager.default.contentsEqual(atPath: copy, andPath: "/bin/true"))
        }
    }
}
