import ArgumentParser
@preconcurrency import Dispatch
import ReachabilityCore
import ReachctlSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the current path, then one line per change, until interrupted."
    )

    @OptionGroup var common: CommonOptions

    @Flag(help: "Print every interface, then one line per interface that changes (not the path).")
    var interfaces = false

    func run() async throws {
        if interfaces {
            let stop = SignalStop(signals: [SIGINT, SIGTERM]) { Glibc.exit(0) }
            defer { withExtendedLifetime(stop) {} }
            let (changes, source) = try common.interfaceChanges()
            defer { withExtendedLifetime(source) {} }
            for await change in changes {
                write(line: common.json ? change.jsonString() : PathText.interface(change))
            }
            return
        }
        if common.direct {
            // Printed from the monitor's own thread: no hop to a task between the kernel and the line,
            // and each line written over the last one's memory (only that thread takes the lock).
            let json = common.json
            let line = Mutex<[UInt8]>([])
            let monitor = try common.startMonitor { path in
                guard json else { return write(line: PathText.line(path)) }
                line.withLock { bytes in
                    path.jsonLine(into: &bytes)
                    write(utf8Line: bytes)
                }
            }
            let (stopped, stopping) = AsyncStream.makeStream(of: Never.self)
            let stop = SignalStop(signals: [SIGINT, SIGTERM]) {
                monitor.stop()
                stopping.finish()
            }
            defer { withExtendedLifetime(stop) {} }
            for await _ in stopped {}
            return
        }
        if common.json, let documents = common.pathDocuments() {
            let stop = SignalStop(signals: [SIGINT, SIGTERM]) { Glibc.exit(0) }
            defer { withExtendedLifetime(stop) {} }
            for await document in documents { write(line: document) }
            return
        }
        let (paths, stopPaths) = try common.paths()
        let stop = SignalStop(signals: [SIGINT, SIGTERM], stopPaths)
        defer { withExtendedLifetime(stop) {} }
        var line: [UInt8] = []
        for await path in paths {
            guard common.json else {
                write(line: PathText.line(path))
                continue
            }
            path.jsonLine(into: &line)
            write(utf8Line: line)
        }
    }
}

/// Turns SIGINT/SIGTERM into a clean stop (exit 0) instead of death by signal.
final class SignalStop {
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32], _ action: @escaping @Sendable () -> Void) {
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: action)
            source.resume()
            return source
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
