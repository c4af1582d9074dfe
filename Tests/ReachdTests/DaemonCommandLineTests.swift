import Foundation
import NamespaceTesting
import ProgramSupport
import TestTraits
import Testing

/// The binaries' command lines, as any user: what they print and how they exit before
/// they watch anything (no namespace is needed for that).
@Suite("reachd's command line (binary)", .ownThreads)
struct DaemonCommandLineTests {
    @Test(
        "a bad config at start fails with file:line — a misspelt table and a top-level key too; a missing one means defaults",
        arguments: [
            ("[trust]\nrecheck = \"sometimes\"\n", "reachd.toml:2: recheck must be one of on-change, interval, both"),
            ("[monitor]\n\n[conectivity]\nuri = \"http://192.0.2.1/\"\n", "reachd.toml:3: unknown table [conectivity]"),
            ("foo = 1\n", "reachd.toml:1: unknown key 'foo' (every key belongs in a table)")
        ])
    func badConfigAtStart(_ text: String, _ message: String) async throws {
        try await withScratch { scratch in
            let config = scratch.appendingPathComponent("reachd.toml")
            try text.write(to: config, atomically: true, encoding: .utf8)
            // It exits before it opens anything; `timeout` ends a reachd that would not.
            let result = try run(
                [
                    "timeout", "10", DaemonProcess.binary, "--bus", "none", "--config", config.path,
                    "--socket", scratch.appendingPathComponent("bus").path
                ], check: false)
            #expect(result.status == 1)
            #expect(result.error.contains(message), "\(result.error)")
        }
    }

    @Test("the command line of docs/daemon.md: --help, and usage errors exit 64 naming the option")
    func commandLine() throws {
        let help = try run([DaemonProcess.binary, "--help"])
        #expect(help.output.hasPrefix("USAGE: reachd [--config <file>] [--bus <bus>] [--socket <path>] [--log-level <level>]\n"))
        for option in ["--config", "--bus", "--socket", "--log-level"] { #expect(help.output.contains("  \(option) <"), "\(option)") }
        for (arguments, message) in [
            (["--bogus"], "unknown option '--bogus'"), (["--config"], "missing value for '--config'"),
            (["--config="], "missing value for '--config'"), (["--bus", "--socket", "x"], "missing value for '--bus'"),
            (["--log-level=loud"], "--log-level must be one of error, warning, notice, info, debug, not 'loud'"),
            (["stray"], "unexpected argument 'stray'")
        ] {
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
}
