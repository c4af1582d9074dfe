import Foundation
import NamespaceTesting
import ReachabilityCore

#if canImport(Glibc)
import Glibc
#endif

/// `reachctl watch` (the library's monitor in its own process) on a namespace
/// with a full-table-sized FIB, beside `ip monitor` as the raw reference.
struct ScaleBenchmark {
    let routes: Int
    let changes: Int
    let reachctl: String

    struct Result {
        var loadSeconds = 0.0
        var firstPathSeconds = 0.0
        var rssAtStartKiB = 0
        var rssAfterKiB = 0
        var monitorMicrosecondsPerChange = 0.0
        var rawMicrosecondsPerChange = 0.0
        var pathStillRight = false
        var finalStatus = ""
    }

    func run() throws -> Result {
        let network = try WatchedNamespace("bench-1m")
        let host = network.host
        var result = Result()

        // 100.64.0.0/10 holds 4M /32s, none overlapping the uplink.
        func route(_ verb: String, _ number: Int) -> String {
            let value = 0x6440_0000 + number
            return "route \(verb) \(value >> 24 & 255).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)/32 via 10.1.0.1 dev eth0"
        }
        let load = now()
        try host.ipBatch((0..<routes).map { route("add", $0) })
        result.loadSeconds = Double(now() - load) / 1e9

        try network.startWatchers(reachctl: reachctl, referenceObjects: ["route"])
        let watch = network.watch!
        result.firstPathSeconds = Double(watch.lines[0].time - watch.started) / 1e9
        result.rssAtStartKiB = residentKiB(of: watch.pid)
        usleep(200_000)

        let before = network.cpu
        let churn = (0..<changes / 2).flatMap { number in
            [route("add", routes + number), route("del", routes + number)]
        }
        try host.ipBatch(churn)
        usleep(1_000_000) // let both listeners finish the queue
        let after = network.cpu
        result.monitorMicrosecondsPerChange = Double(after.watch - before.watch) / 1e3 / Double(churn.count)
        result.rawMicrosecondsPerChange = Double(after.reference - before.reference) / 1e3 / Double(churn.count)
        result.rssAfterKiB = residentKiB(of: watch.pid)

        // Still right: the watcher's last document is what a fresh look says, and it still reacts.
        try host.ip("route del default")
        _ = watch.waitForLines(2, timeout: 5)
        let last = try network.lastWatchedPath()
        result.pathStillRight = try network.freshPath().isSamePath(as: last) && watch.lines.count == 2 && last.reason == .noRoute
        result.finalStatus = "\(last.status.rawValue) (\(last.reason?.rawValue ?? "-"))"
        return result
    }
}
