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
        let host = try TestNamespace("bench-storm")
        let router = try TestNamespace("bench-stormr")
        defer { host.remove(); router.remove() }
        try host.addUplink(router: router)
        try host.ip("link add name flap0 type veth peer name flap1")
        var result = Result()
        let reference = try BackgroundProcess(["ip", "-n", host.name, "monitor"])
        let watch = try BackgroundProcess(["ip", "netns", "exec", host.name, reachctl, "watch", "--json"])
        defer { watch.stop(); reference.stop() }
        guard watch.waitForLines(1) else { throw BenchmarkError("reachctl watch printed nothing") }
        // In-process too, with a small buffer, to count overruns and re-dumps.
        let monitor = ReachabilityMonitor(options: try MonitorOptions(receiveBufferSize: 64 << 10, networkNamespace: host.path))
        try monitor.start()
        defer { monitor.stop() }
        usleep(200_000)

        let monitorBefore = cpuNanoseconds(of: watch.pid)
        let rawBefore = cpuNanoseconds(of: reference.pid)
        var commands = (0 ..< flaps).map { $0 % 2 == 0 ? "link set dev flap0 up" : "link set dev flap0 down" }
        commands += ["link set dev flap0 up", "link set dev flap1 up", "route del default"]
        let start = now()
        try host.ipBatch(commands)
        result.seconds = Double(now() - start) / 1e9
        usleep(1_500_000)
        result.monitorCPUMilliseconds = Double(cpuNanoseconds(of: watch.pid) - monitorBefore) / 1e6
        result.rawCPUMilliseconds = Double(cpuNanoseconds(of: reference.pid) - rawBefore) / 1e6

        let fresh = try ReachabilityMonitor.path(options: MonitorOptions(networkNamespace: host.path))
        let last = try Path(json: watch.lines.last?.line ?? "")
        result.watchFinalRight = fresh.isSamePath(as: last)
        result.monitorFinalRight = monitor.currentPath.map(fresh.isSamePath) ?? false
        result.overruns = monitor.statistics.overruns
        result.dumps = monitor.statistics.dumps
        if !result.watchFinalRight || !result.monitorFinalRight {
            print("   fresh:   \(fresh.jsonString())\n   watch:   \(last.jsonString())\n   monitor: \(monitor.currentPath?.jsonString() ?? "-")")
        }
        return result
    }
}
