import Foundation
import TOML
import Testing

@Suite("Reading a config file")
struct TOMLFileTests {
    func scratchFile(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("toml-\(UUID()).toml").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a file is read and parsed, with its name in errors")
    func readsFile() throws {
        let path = try scratchFile(Array("[monitor]\nprobe-ipv4 = \"192.0.2.1\"\nbad = \n".utf8))
        defer { unlink(path) }
        #expect(throws: TOMLError(file: path, line: 3, message: "expected a value")) { try TOML.parse(contentsOfFile: path) }
    }

    @Test("what cannot be read says why, in one line naming the file")
    func unreadable() throws {
        let directory = FileManager.default.temporaryDirectory.path
        #expect(throws: TOMLError(file: directory, line: 0, message: "cannot read it: Is a directory")) {
            try TOML.parse(contentsOfFile: directory)
        }
        #expect(throws: TOMLError(file: "/nonexistent/reachd.toml", line: 0, message: "cannot read it: No such file or directory")) {
            try TOML.parse(contentsOfFile: "/nonexistent/reachd.toml")
        }
        let latin1 = try scratchFile([0x6B, 0x20, 0x3D, 0x20, 0x22, 0xE9, 0x22, 0x0A])
        defer { unlink(latin1) }
        #expect(throws: TOMLError(file: latin1, line: 0, message: "not UTF-8 text")) { try TOML.parse(contentsOfFile: latin1) }
        #expect(throws: TOMLError(file: "/dev/zero", line: 0, message: "larger than 1 MiB; not a configuration file")) {
            try TOML.parse(contentsOfFile: "/dev/zero")
        }
        // Nobody writes to it: opening it must not wait for a writer.
        let fifo = directory + "/reachd-fifo-\(getpid()).toml"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        #expect(throws: TOMLError(file: fifo, line: 0, message: "cannot read it: it is a FIFO, not a file")) {
            try TOML.parse(contentsOfFile: fifo)
        }
    }

    @Test("/dev/null is an empty config, not an error")
    func devNull() throws {
        #expect(try TOML.parse(contentsOfFile: "/dev/null").keys.isEmpty)
    }
}
