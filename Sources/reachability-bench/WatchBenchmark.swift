import Foundation
import NamespaceTesting
import ReachabilityContract
import SDBus

#if canImport(Glibc)
import Glibc
#endif

/// What `WatchPath()` watches cost reachd per kernel change: 0, 8, 64 and 256
/// watches of destinations routed through the default route, held by clients of
/// the private socket (eight per connection, each connection read by a thread of
/// its own), while the default route is deleted and re-added `changes` times —
/// every change moves every watched path, the worst case. reachd's CPU per
/// change beside `ip monitor`'s in the same run.
struct WatchBenchmark {
    let changes: Int
    let reachd: String

    struct Row {
        var watches: Int
        var reachdMicroseconds: Double
        var ipMonitorMicroseconds: Double
        var pathChangedSignals: Int
        var rssKiB: Int
    }

    func run(watches: Int) throws -> Row {
        let site = try BenchSite("watch")
        let (daemon, socket) = try site.startDaemon(reachd, logLevel: "warning")
        defer { stopProcess(daemon) }
        let subscriber = try SignalSubscriber(socket: socket)
        let readers = try (0..<(watches + 7) / 8).map { connection in
            try WatchReader(socket: socket, destinations: (0..<min(8, watches - connection * 8)).map { "10.9.\(connection).\($0 + 1)" })
        }
        defer { readers.forEach { $0.close() } }
        let monitor = try BackgroundProcess(["ip", "-n", site.host.name, "monitor", "route"])
        defer { stopProcess(monitor.process) }
        usleep(300_000)

        let pid = daemon.processIdentifier
        let reachdBefore = cpuNanoseconds(of: pid), monitorBefore = cpuNanoseconds(of: monitor.process.processIdentifier)
        for index in 0..<changes * 2 {
            let add = index % 2 == 1
            subscriber.arm(add ? "wired" : "unreachable")
            try site.host.ip(add ? "route add default via 10.1.0.1" : "route del default")
            guard subscriber.wait() != nil else { throw BenchmarkError("change \(index): no StatusChanged within 5 s") }
        }
        usleep(200_000)
        let perChange = { (before: UInt64, after: UInt64) in Double(after - before) / 1e3 / Double(changes * 2) }
        return Row(
            watches: watches,
            reachdMicroseconds: perChange(reachdBefore, cpuNanoseconds(of: pid)),
            ipMonitorMicroseconds: perChange(monitorBefore, cpuNanoseconds(of: monitor.process.processIdentifier)),
            pathChangedSignals: readers.reduce(0) { $0 + $1.received }, rssKiB: residentKiB(of: pid))
    }
}

/// One connection of the private socket holding up to eight watches, read by a
/// thread of its own (a client that did not read would be dropped), counting the
/// `PathChanged` signals it is sent.
final class WatchReader: @unchecked Sendable {
    private let connection: BusConnection
    private let lock = NSLock()
    private var count = 0

    init(socket: String, destinations: [String]) throws {
        connection = try BusConnection.connect(.address("unix:path=\(socket)"))
        try connection.onSignal(.pathChanged, from: nil) { [self] _, _, _ in
            lock.lock()
            count += 1
            lock.unlock()
        }
        for destination in destinations {
            _ = try connection.call(.watchPath, destination, "", timeout: .seconds(5))
        }
        nonisolated(unsafe) let connection = connection
        Thread.detachNewThread {
            while connection.isOpen {
                while (try? connection.process()) == true {}
                try? connection.wait(timeout: .milliseconds(200))
            }
        }
    }

    var received: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func close() { connection.close() }
}
