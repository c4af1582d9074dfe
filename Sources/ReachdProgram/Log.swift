import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// One line per event on stderr. Under journald (JOURNAL_STREAM set) each line
/// carries its syslog level as a `<N>` prefix, which journald turns into the priority.
enum Log {
    enum Level: Int, Comparable, CaseIterable, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7

        static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        init?(name: String) {
            guard let level = Self.allCases.first(where: { "\($0)" == name }) else { return nil }
            self = level
        }
    }

    nonisolated(unsafe) static var threshold = Level.info
    static let toJournal = getenv("JOURNAL_STREAM") != nil

    static func write(_ level: Level, _ message: String) {
        guard level <= threshold else { return }
        var line = (toJournal ? "<\(level.rawValue)>" : "") + "reachd: " + message + "\n"
        line.withUTF8 { bytes in _ = Glibc.write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }

    static func error(_ message: String) { write(.error, message) }
    static func warning(_ message: String) { write(.warning, message) }
    static func notice(_ message: String) { write(.notice, message) }
    static func info(_ message: String) { write(.info, message) }
    static func debug(_ message: String) { write(.debug, message) }
}
