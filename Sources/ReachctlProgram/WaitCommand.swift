import ArgumentParser
import ReachabilityCore
import ReachctlSupport

#if canImport(Glibc)
import Glibc
#endif

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Block until the path has the wanted status (what boot scripts use).",
        discussion: "Exits 0 as soon as the status matches (at once if it already does), 1 when the timeout passes first. "
            + "online waits for connectivity full: the daemon's probe (or a validated trust host) saw the Internet, not a captive portal."
    )

    @Option(
        name: .customLong("for"),
        help: "reachable (any of wifi, wired, cellular), online (connectivity full), wifi, wired, cellular or unreachable.")
    var wanted: PathCondition = .reachable

    @Option(help: ArgumentHelp("How long to wait: 500ms, 30s, 2m, or seconds.", valueName: "duration"))
    var timeout = "30s"

    @OptionGroup var common: CommonOptions

    func run() async throws {
        guard let limit = Self.duration(timeout) else { throw fail("--timeout", "\"\(timeout)\" is not a duration such as 30s") }
        let (paths, stopPaths) = try common.paths()
        let stop = SignalStop(signals: [SIGINT, SIGTERM], stopPaths)
        defer { withExtendedLifetime(stop) {} }
        let met = await wanted.firstPath(in: paths, timeout: limit)
        guard let met else {
            write(line: "reachctl: waiting for \(wanted.rawValue): timed out after \(timeout)", to: STDERR_FILENO)
            throw ExitCode(1)
        }
        if common.json { write(line: met.jsonString()) }
    }

    static func duration(_ text: String) -> Duration? {
        if text.hasSuffix("ms"), let value = Double(text.dropLast(2)) { return .milliseconds(value) }
        if text.hasSuffix("s"), let value = Double(text.dropLast()) { return .milliseconds(value * 1000) }
        if text.hasSuffix("m"), let value = Double(text.dropLast()) { return .milliseconds(value * 60_000) }
        if let value = Double(text) { return .milliseconds(value * 1000) }
        return nil
    }
}

extension PathCondition: ExpressibleByArgument {}
