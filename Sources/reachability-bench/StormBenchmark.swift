import Foundation
import NamespaceTesting
import ReachabilityCore

#if canImport(Glibc)
import Glibc
#endif

/// 5,000 link flaps as fast as `ip -batch` makes them: CPU of `reachctl watch`
/// and of `ip monitor`, the in-process monitor's overruns, and the final state.
struct StormBenchmark {
    let flaps: Int
    let reachctl: String

    struct Result {
        var seconds = 0.0
        var monitorCPUMilliseconds = 0.0
        var rawCPUMilliseconds = 0.0
        var overruns = 0
        var dumps = 0
        var watchFinalRight = false
        var monitorFinalRight = false
    }

    func run() throws -> Result {
        let network = try WatchedNamespace("bench-storm")
        let host = network.host
        try host.ip("link add name flap0 type veth peer name flap1")
        var result = Result()
        try network.startWatchers(reachctl: reachctl)
        // In-process too, with a small buffer, to count overruns and re-dumps.
        let monitor = ReachabilityMonitor(options: try MonitorOptions(receiveBufferSize: 64 << 10, networkNamespace: host.path))
        try monitor.start()
        defer { monitor.stop() }
        usleep(200_000)

        let before = network.cpu
        var commands = (0..<flaps).map { $0 % 2 == 0 ? "link set dev flap0 up" : "link set dev flap0 down" }
        commands += ["link set dev flap0 up", "link set dev flap1 up", "route del default"]
        let start = now()
        try host.ipBatch(commands)
        result.seconds = Double(now() - start) / 1e9
        usleep(1_500_000)
        let after = network.cpu
        result.monitorCPUMilliseconds = Double(after.watch - before.watch) / 1e6
        result.rawCPUMilliseconds = Double(after.reference - before.reference) / 1e6

        let fresh = try network.freshPath()
        result.watchFinalRight = try fresh.isSamePath(as: network.lastWatchedPath())
        result.monitorFinalRight = monitor.currentPath.map(fresh.isSamePath) ?? false
        result.overruns = monitor.statistics.overruns
        result.dumps = monitor.statistics.dumps
        return result
    }
}
