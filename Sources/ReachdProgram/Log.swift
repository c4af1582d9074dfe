import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Where the daemon says what happened: one line per event. The daemon and each of
/// its components write through the `Log` they were handed — `standardError` in the
/// program, a test's own in `ServedDaemon` (several daemons in one process, each
/// with its log).
struct Log: Sendable {
    enum Level: Int, Comparable, CaseIterable, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7

        static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        init?(name: String) {
            guard let level = Self.allCases.first(where: { "\($0)" == name }) else { return nil }
            self = level
        }
    }

    /// Lines above it (less severe) are not written.
    let threshold: Level
    private let sink: @Sendable (Level, String) -> Void

    init(threshold: Level = .info, sink: @escaping @Sendable (_ level: Level, _ line: String) -> Void) {
        (self.threshold, self.sink) = (threshold, sink)
    }

    /// stderr, each line `reachd: …`; under journald (JOURNAL_STREAM set) with its
    /// syslog level as a `<N>` prefix, which journald turns into the priority.
    static func standardError(threshold: Level = .info) -> Log {
        let toJournal = getenv("JOURNAL_STREAM") != nil
        return Log(threshold: threshold) { level, message in
            var line = (toJournal ? "<\(level.rawValue)>" : "") + "reachd: " + message + "\n"
            line.withUTF8 { bytes in _ = Glibc.write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
        }
    }

    func write(_ level: Level, _ message: String) {
        guard level <= threshold else { return }
        sink(level, message)
    }

    func error(_ message: String) { write(.error, message) }
    func warning(_ message: String) { write(.warning, message) }
    func notice(_ message: String) { write(.notice, message) }
    func info(_ message: String) { write(.info, message) }
    func debug(_ message: String) { write(.debug, message) }
}
