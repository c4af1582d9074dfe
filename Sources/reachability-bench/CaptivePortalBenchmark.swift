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

    /// Wall-clock milliseconds, and the CPU milliseconds and peak RSS (KiB) of what it ran: the
    /// child's own (`wait4`), not `RUSAGE_CHILDREN`'s, whose peak is the largest of any child the
    /// benchmark ever waited for (a whole `make bench` ran NetworkManager with 5,000 interfaces first).
    private func measure(_ arguments: [String]) throws -> (wall: Double, cpu: Double, peakKiB: Int) {
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
        return (wall, ms(usage.ru_utime) + ms(usage.ru_stime), usage.ru_maxrss)
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

        for _ in 0 ..< repetitions {
            let fetch = try measure(["ip", "netns", "exec", host.name, "curl", "-sS", "--cacert", anchor, "--interface", "eth0",
                                     "-H", "Accept: application/captive+json", "-o", "/dev/null", uri])
            result.curl.append(fetch.wall)
            result.curlCPU.append(fetch.cpu)
            result.curlPeakKiB = max(result.curlPeakKiB, fetch.peakKiB)
        }
        for _ in 0 ..< repetitions {
            let query = try measure(["ip", "netns", "exec", host.name, helper, "capport", uri, index, "5000", anchor])
            result.helper.append(query.wall)
            result.helperCPU.append(query.cpu)
            result.helperPeakKiB = max(result.helperPeakKiB, query.peakKiB)
        }

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
                guard Date() < deadline else { throw BenchmarkError("reachd did not publish the path\(withAPI ? " and the API's answer" : "")") }
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .seconds(2))
            let rss = residentKiB(of: daemon.processIdentifier)
            if withAPI {
                result.rssWithKiB = rss
                for _ in 0 ..< repetitions {
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
