import Foundation
import NamespaceTesting
import ReachabilityClient
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The captive-portal API (RFC 8908): what one query costs — `reachd-trust capport`
/// from start to answer, its CPU and peak memory — beside curl fetching the same
/// document from the same HTTPS server in the same run; and what a re-query costs
/// end to end: `CheckConnectivity()` on a daemon whose only evidence is the API
/// (it answers once the API has), from a client of its private socket.
struct CaptivePortalBenchmark {
    let reachd: String
    let repetitions: Int

    struct Result {
        var helper: [Double] = [], helperCPU: [Double] = [], helperPeakKiB = 0
        var curl: [Double] = [], curlCPU: [Double] = [], curlPeakKiB = 0
        var checkConnectivity: [Double] = []
        var rssWithoutKiB = 0, rssWithKiB = 0
    }

    /// Wall-clock milliseconds, and the CPU milliseconds of what it ran (the child's own, `wait4`).
    private func measure(_ arguments: [String]) throws -> (wall: Double, cpu: Double) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in [STDOUT_FILENO, STDERR_FILENO] {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
        }
        var argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let start = now()
        guard posix_spawnp(&pid, arguments[0], &actions, nil, &argv, environ) == 0 else {
            throw BenchmarkError("cannot start \(arguments[0])")
        }
        var status: Int32 = 0
        var usage = rusage()
        guard retryingOnInterrupt({ wait4(pid, &status, 0, &usage) }) == pid else { throw BenchmarkError("wait4 failed") }
        let wall = milliseconds(now() - start)
        guard status == 0 else { throw BenchmarkError("\(arguments.joined(separator: " ")) exited with status \(status)") }
        func ms(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return (wall, ms(usage.ru_utime) + ms(usage.ru_stime))
    }

    /// The peak RSS (KiB) of `arguments` over `runs` runs, as GNU time reports it. Not the
    /// `ru_maxrss` that `wait4` gives for a child of this benchmark: Linux carries the high-water
    /// mark of the memory a process had before its exec — for a child of fork or vfork, its
    /// parent's — into the child's, so curl and the helper both "peaked" at the benchmark's own
    /// 390,816 KiB in a whole run. time's child is forked from time (about 1 MiB), and its peak is its own.
    private func peakKiB(_ arguments: [String], runs: Int = 5, report: URL) throws -> Int {
        try (0..<runs).map { _ in
            _ = try NamespaceTesting.run(["/usr/bin/time", "-f", "%M", "-o", report.path] + arguments)
            let text = try String(contentsOf: report, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let kib = Int(text) else { throw BenchmarkError("GNU time said \"\(text)\", not a size in KiB") }
            return kib
        }.max() ?? 0
    }

    func run() async throws -> Result {
        let site = try BenchSite("cap")
        let (host, router, scratch) = (site.host, site.router, site.scratch)
        try CaptivePortalNetwork.makePKI(for: "10.1.0.1", in: scratch)
        let document = #"{"captive": false, "user-portal-url": "https://10.1.0.1:4443/login", "seconds-remaining": 3600}"#
        let server = try await CaptivePortalNetwork.APIServer(in: router, address: "10.1.0.1", directory: scratch, answer: document)
        defer { server.stop() }
        let helper = URL(fileURLWithPath: reachd).deletingLastPathComponent().appendingPathComponent("reachd-trust").path
        let anchor = scratch.appendingPathComponent("capport-ca.pem").path
        let index = try host.exec(["cat", "/sys/class/net/eth0/ifindex"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let uri = "https://10.1.0.1:4443/capport"
        var result = Result()

        let fetch = [
            "ip", "netns", "exec", host.name, "curl", "-sS", "--cacert", anchor, "--interface", "eth0",
            "-H", "Accept: application/captive+json", "-o", "/dev/null", uri
        ]
        let query = ["ip", "netns", "exec", host.name, helper, "capport", uri, index, "5000", anchor]
        for _ in 0..<repetitions {
            let measured = try measure(fetch)
            result.curl.append(measured.wall)
            result.curlCPU.append(measured.cpu)
        }
        for _ in 0..<repetitions {
            let measured = try measure(query)
            result.helper.append(measured.wall)
            result.helperCPU.append(measured.cpu)
        }
        let report = scratch.appendingPathComponent("peak")
        result.curlPeakKiB = try peakKiB(fetch, report: report)
        result.helperPeakKiB = try peakKiB(query, report: report)

        // End to end: the daemon with only the API for evidence; CheckConnectivity() answers once it has answered.
        let config = scratch.appendingPathComponent("reachd.toml")
        try "[connectivity]\ncapport = \"\(uri)\"\ncapport-anchors = [\"capport-ca.pem\"]\nnetworkd-links = \"\"\n"
            .write(to: config, atomically: true, encoding: .utf8)
        let empty = scratch.appendingPathComponent("empty.toml")
        try "[connectivity]\ncapport = \"off\"\n".write(to: empty, atomically: true, encoding: .utf8)
        for (file, withAPI) in [(empty, false), (config, true)] {
            let (daemon, socket) = try site.startDaemon(reachd, logLevel: "warning", config: file.path)
            defer { stopProcess(daemon) }
            let client = ReachabilityClient(endpoint: .address("unix:path=\(socket)"))
            let deadline = Date().addingTimeInterval(20)
            while true {
                let path = try? await client.currentPath()
                if path?.status == .wired, !withAPI || path?.capport?.captive == false { break }
                guard Date() < deadline else {
                    throw BenchmarkError("reachd did not publish the path\(withAPI ? " and the API's answer" : "")")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .seconds(2))
            let rss = residentKiB(of: daemon.processIdentifier)
            if withAPI {
                result.rssWithKiB = rss
                for _ in 0..<repetitions {
                    let start = now()
                    _ = try await client.checkConnectivity()
                    result.checkConnectivity.append(milliseconds(now() - start))
                }
            } else {
                result.rssWithoutKiB = rss
            }
        }
        return result
    }
}
