import Foundation
import Reachability
import Testing

@Suite("Monitor options from reachd.toml")
struct MonitorOptionsTests {
    func load(_ text: String) throws -> MonitorOptions {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-\(UUID()).toml").path
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try MonitorOptions.load(contentsOf: file)
    }

    /// The error text with the temporary file's path cut off: "LINE: reason".
    func error(_ text: String) -> String {
        do {
            _ = try load(text)
            return "no error"
        } catch {
            return String(describing: error).split(separator: ":", maxSplits: 1).last.map(String.init) ?? ""
        }
    }

    @Test("every key of the [monitor] table (docs/configuration.md)")
    func fullTable() throws {
        let options = try load(
            """
            [monitor]
            probe-ipv4 = "192.0.2.1"              # comment
            probe-ipv6 = "2001:db8::1"
            ignore = ["docker*", "veth*"]
            metered = ["usb0"]

            [monitor.kind]
            usb0 = "cellular"

            [trust]
            recheck = "on-change"
            """)
        #expect(options.probeIPv4 == "192.0.2.1")
        #expect(options.probeIPv6 == "2001:db8::1")
        #expect(options.ignore == ["docker*", "veth*"])
        #expect(options.metered == ["usb0"])
        #expect(options.kindOverrides.map(\.pattern) == ["usb0"])
        #expect(options.kindOverrides.map(\.kind) == [.cellular])
    }

    @Test("no [monitor] table means defaults")
    func defaults() throws {
        #expect(try load("") == MonitorOptions())
        #expect(MonitorOptions().probeIPv4 == MonitorOptions.defaultProbeIPv4)
    }

    @Test("bad input is rejected with its line and the reason")
    func errors() {
        #expect(error("[monitor]\nprobe-ipv4 = \"2001:db8::1\"\n").hasPrefix("2: probe-ipv4 must be an IPv4 address"))
        #expect(error("[monitor]\nprobe-ipv4 = \"127.0.0.1\"\n").hasPrefix("2: probe-ipv4 must be a global address"))
        #expect(error("[monitor]\n\nprobe = \"1.2.3.4\"\n") == "3: unknown key 'probe' in [monitor]")
        #expect(error("[monitor]\nignore = \"docker*\"\n") == "2: ignore must be an array of strings, not a string")
        #expect(error("[monitor.kind]\nusb0 = \"modem\"\n").hasPrefix("2: kind of usb0 must be one of loopback, ethernet"))
        #expect(error("[monitor]\nignore = [\"docker*\"\n") == "2: unterminated array")
        #expect(error("[monitor]\nmetered = [1]\n") == "2: metered must hold strings, found an integer")
    }
}
