import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import ReachabilityClient
import SystemCalls

/// §12: a container host. `interfaces` interfaces as pods (veth pairs, the host end
/// on a bridge of at most 1,000 ports, as with two Docker networks), then pods
/// created and deleted at `podsPerSecond` each in the CNI bridge plugin's order,
/// while the default route is deleted and re-added every half second. Measured in
/// the same run: CPU per pod (create + delete) of reachd, its `reachctl watch`, a
/// `reachctl watch --direct` and the `ip monitor` reference; RSS; reachd's start-up;
/// and how long the route's deletion takes to reach each subscriber.
struct ContainerHostBenchmark {
    let interfaces: Int
    let seconds: Int
    let podsPerSecond = 20
    let reachd: String
    let reachctl: String

    struct Result {
        var startupMilliseconds: Double
        /// NetworkManager's, where it is installed: until `nmcli` says it runs.
        var networkManagerStartupMilliseconds: Double?
        var pods: Int
        /// Process name → CPU ms per pod, RSS KiB at the end.
        var cpuPerPod: [(String, Double)] = []
        /// Process name → CPU ms per second while nothing changed (the host's own background: IPv6 timers of every interface).
        var idlePerSecond: [(String, Double)] = []
        /// How long the idle took to be steady (`settledIdle`, seconds); nil when it never was.
        var idleSteadyAfter: Int?
        var rss: [(String, Int)] = []
        /// Subscriber → milliseconds from the deletion's request to its line.
        var deletion: [(String, [Double])] = []
        /// Subscriber → milliseconds from `ip monitor`'s line (the kernel's announcement) to its own, per deletion.
        var afterAnnouncement: [(String, [Double])] = []
        /// Lines the daemon's path subscriber printed during the churn beyond the route changes.
        var extraPathDocuments: Int
    }

    func run() throws -> Result {
        let site = try BenchSite("pods\(interfaces)")
        let host = site.host
        let pairs = interfaces / 2
        var commands: [String] = []
        let bridges = (pairs + 999) / 1000
        for bridge in 0..<bridges {
            commands += [
                "link add name cni\(bridge) type bridge", "addr add 10.\(88 + bridge).0.1/16 dev cni\(bridge)",
                "link set dev cni\(bridge) up"
            ]
        }
        for pod in 0..<pairs { commands += Self.create(pod, bridges: bridges) }
        _ = try NamespaceTesting.run(["ip", "-n", host.name, "-batch", "-"], input: commands.joined(separator: "\n") + "\n")
        // The kernel goes on configuring thousands of new interfaces for a while (IPv6 addresses,
        // routes, multicast): a node that has been up for a while is what is measured.
        sleep(UInt32(3 + interfaces / 1000))

        let started = now()
        let (daemon, socket) = try site.startDaemon(reachd, logLevel: "info")
        defer { stopProcess(daemon) }
        let client = ReachabilityClient(endpoint: .address("unix:path=\(socket)"))
        while (try? client.blocking.currentPath()) == nil {
            guard now() - started < 30_000_000_000 else { throw BenchmarkError("reachd did not answer within 30 s") }
            usleep(1_000)
        }
        var result = Result(startupMilliseconds: milliseconds(now() - started), pods: 0, extraPathDocuments: 0)
        // NetworkManager beside it where installed, observing every device (none managed), with its own bus.
        let networkManager = try PeerNetworkManager.start(in: host, scratch: site.scratch)
        defer { networkManager?.stop() }
        result.networkManagerStartupMilliseconds = networkManager?.startupMilliseconds

        let watch = try LineReader(["ip", "netns", "exec", host.name, reachctl, "watch", "--json", "--bus", socket])
        defer { watch.stop() }
        let direct = try LineReader(["ip", "netns", "exec", host.name, reachctl, "watch", "--json", "--direct"])
        defer { direct.stop() }
        let ipMonitor = try LineReader(["ip", "-n", host.name, "monitor"])
        defer { ipMonitor.stop() }
        let clientWaiter = PathWaiter()
        let token = client.onChange(queue: DispatchQueue(label: "bench.pods")) { clientWaiter.received($0) }
        defer { client.cancel(token) }
        for reader in [watch, direct] where reader.firstLine(timeout: 30) == nil { throw BenchmarkError("reachctl watch printed nothing") }
        _ = clientWaiter.wait(for: { $0.status == .wired })
        usleep(300_000)

        let namespace = NetworkNamespace(name: host.name)
        let (control, query) = try namespace.perform { (try RtnetlinkControl(), try RtnetlinkQuery()) }
        guard let eth0 = try query.links().first(where: { $0.name == "eth0" })?.index else { throw BenchmarkError("no eth0") }
        let gateway = IPAddress("10.1.0.1")!, any = IPAddress("0.0.0.0")!

        let processes =
            [
                ("reachd", daemon.processIdentifier), ("reachctl watch", watch.pid), ("reachctl watch --direct", direct.pid),
                ("ip monitor", ipMonitor.pid)
            ]
            + (networkManager.map { [("NetworkManager", $0.pid), ("its dbus-daemon", $0.bus.processIdentifier)] } ?? [])
        let idle = Self.settledIdle(of: processes.map(\.1))
        result.idlePerSecond = zip(processes, idle.perSecond).map { ($0.0, $1) }
        result.idleSteadyAfter = idle.steadyAfter
        let cpuBefore = idle.cpuAtEnd
        let churnStarted = now()
        let linesBefore = watch.lineCount

        // The churn: one `ip -batch` fed a pod at a time, on a thread of its own.
        let churn = Process()
        churn.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        churn.arguments = ["ip", "-n", host.name, "-batch", "-"]
        let input = Pipe()
        churn.standardInput = input
        churn.standardError = FileHandle.nullDevice
        try churn.run()
        let total = podsPerSecond * seconds
        let churning = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let start = now()
            for step in 0..<total {
                // Create a new pod, delete the oldest: the count of interfaces stays put.
                let lines = Self.create(pairs + step, bridges: bridges) + ["link del dev h\(step)"]
                input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
                let due = start + UInt64(step + 1) * 1_000_000_000 / UInt64(podsPerSecond)
                let current = now()
                if due > current { usleep(UInt32((due - current) / 1000)) }
            }
            try? input.fileHandleForWriting.close()
            churning.signal()
        }

        var samples: [String: [Double]] = [:]
        var afterIPMonitor: [String: [Double]] = [:]
        var routeChanges = 0
        let deadline = now() + UInt64(seconds) * 1_000_000_000 - 600_000_000
        while now() < deadline {
            usleep(250_000)
            let stages: [(String, () -> Void, () -> UInt64?)] = [
                ("ip monitor", { ipMonitor.arm { $0.hasPrefix("Deleted default") } }, ipMonitor.wait),
                ("reachctl watch", { watch.arm { $0.contains("\"status\":\"unreachable\"") } }, watch.wait),
                ("reachctl watch --direct", { direct.arm { $0.contains("\"status\":\"unreachable\"") } }, direct.wait),
                ("ReachabilityClient (StatusChanged)", { clientWaiter.arm { $0.status == .unreachable } }, { clientWaiter.wait() })
            ]
            stages.forEach { $0.1() }
            let start = now()
            try control.route(add: false, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
            var announced: UInt64 = start
            for (name, _, wait) in stages {
                guard let time = wait(), time >= start else { throw BenchmarkError("\(name) did not see the deletion within 5 s") }
                samples[name, default: []].append(milliseconds(time - start))
                if name == "ip monitor" {
                    announced = time
                } else {
                    afterIPMonitor[name, default: []].append((Double(time) - Double(announced)) / 1e6)
                }
            }
            usleep(250_000)
            clientWaiter.arm { $0.status == .wired }
            try control.route(add: true, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
            _ = clientWaiter.wait()
            routeChanges += 2
        }
        churning.wait()
        churn.waitUntilExit()
        usleep(500_000)
        let cpuAfter = processes.map { cpuNanoseconds(of: $0.1) }
        let churnSeconds = Double(now() - churnStarted) / 1e9
        result.pods = total
        for (index, process) in processes.enumerated() {
            // Net of the background the host costs each process anyway.
            let used = Double(cpuAfter[index] - cpuBefore[index]) / 1e6 - result.idlePerSecond[index].1 * churnSeconds
            result.cpuPerPod.append((process.0, max(0, used) / Double(total)))
            result.rss.append((process.0, residentKiB(of: process.1)))
        }
        result.deletion = ["ip monitor", "reachctl watch", "reachctl watch --direct", "ReachabilityClient (StatusChanged)"].map {
            ($0, samples[$0] ?? [])
        }
        result.afterAnnouncement = ["reachctl watch", "reachctl watch --direct", "ReachabilityClient (StatusChanged)"].map {
            ($0, afterIPMonitor[$0] ?? [])
        }
        result.extraPathDocuments = watch.lineCount - linesBefore - routeChanges
        return result
    }

    /// How many idle windows the measured one may be, and how long each is.
    static let idleWindowLimit = 10
    static let idleWindowSeconds: UInt32 = 3

    /// What each process costs while nothing changes (`settledIdle`).
    struct Idle {
        /// CPU ms per second, process by process, over the last window.
        var perSecond: [Double]
        /// Each process's CPU (ns) at the end of the last window, where the churn's count starts.
        var cpuAtEnd: [UInt64]
        /// Seconds until two windows in a row agreed; nil when the limit came first.
        var steadyAfter: Int?
    }

    /// The idle, taken once it is steady: windows of `idleWindowSeconds` until two in a row
    /// agree for every process (`agree`), at most `idleWindowLimit` of them. A daemon still
    /// starting up (reachd once took 3 s to answer among 5,000 interfaces) would otherwise be
    /// counted as the host's background, and the churn's CPU net of it come out negative
    /// (BENCHMARKS.md §46).
    static func settledIdle(of pids: [Int32]) -> Idle {
        var cpu = pids.map(cpuNanoseconds(of:))
        var rates: [Double] = []
        for window in 1...idleWindowLimit {
            let previous = rates
            sleep(idleWindowSeconds)
            let now = pids.map(cpuNanoseconds(of:))
            rates = zip(now, cpu).map { Double($0 - $1) / 1e6 / Double(idleWindowSeconds) }
            cpu = now
            if window > 1, agree(rates, previous) {
                return Idle(perSecond: rates, cpuAtEnd: cpu, steadyAfter: window * Int(idleWindowSeconds))
            }
        }
        return Idle(perSecond: rates, cpuAtEnd: cpu, steadyAfter: nil)
    }

    /// Whether two windows' rates (ms/s) agree, process by process: within 25 % or 0.3 ms/s.
    static func agree(_ rates: [Double], _ earlier: [Double]) -> Bool {
        zip(rates, earlier).allSatisfy { abs($0 - $1) <= max(0.3, 0.25 * max($0, $1)) }
    }

    /// One pod in the CNI bridge plugin's order: the veth pair, the host end up, the
    /// pod end up, the host end onto its bridge.
    static func create(_ pod: Int, bridges: Int) -> [String] {
        [
            "link add name h\(pod) type veth peer name p\(pod)", "link set dev h\(pod) up", "link set dev p\(pod) up",
            "link set dev h\(pod) master cni\(pod % bridges)"
        ]
    }
}

/// NetworkManager as a peer (Debian's `network-manager`, where installed): in the
/// host namespace with a private system bus, every device unmanaged — it watches
/// and publishes them all, and changes nothing.
final class PeerNetworkManager {
    static let binary = "/usr/sbin/NetworkManager"
    let bus = Process()
    let process = Process()
    var startupMilliseconds = 0.0
    var pid: Int32 { process.processIdentifier }

    static func start(in host: TestNamespace, scratch: URL) throws -> PeerNetworkManager? {
        guard FileManager.default.isExecutableFile(atPath: binary) else { return nil }
        let peer = PeerNetworkManager()
        try peer.run(in: host, scratch: scratch)
        return peer
    }

    private func run(in host: TestNamespace, scratch: URL) throws {
        let directory = scratch.appendingPathComponent("nm")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("connections"), withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig><type>system</type><listen>unix:path=\(socket)</listen><auth>EXTERNAL</auth>
        <policy context="default"><allow user="*"/><deny own="*"/><allow send_type="signal"/>
        <allow send_requested_reply="true" send_type="method_return"/><allow send_requested_reply="true" send_type="error"/>
        <allow receive_type="method_call"/><allow receive_type="method_return"/><allow receive_type="error"/>
        <allow receive_type="signal"/><allow send_destination="org.freedesktop.DBus"/></policy>
        <include>/usr/share/dbus-1/system.d/org.freedesktop.NetworkManager.conf</include></busconfig>
        """.write(to: directory.appendingPathComponent("system.conf"), atomically: true, encoding: .utf8)
        try """
        [main]
        plugins=keyfile
        no-auto-default=*
        [keyfile]
        unmanaged-devices=*
        path=\(directory.path)/connections
        [logging]
        level=WARN
        """.write(to: directory.appendingPathComponent("nm.conf"), atomically: true, encoding: .utf8)
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        bus.arguments = ["dbus-daemon", "--config-file=\(directory.path)/system.conf", "--nofork"]
        bus.standardError = FileHandle.nullDevice
        try bus.run()
        while access(socket, F_OK) != 0 { usleep(1_000) }
        let environment = "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(socket)"
        let started = now()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ip", "netns", "exec", host.name, "env", environment, Self.binary, "--no-daemon",
            "--config=\(directory.path)/nm.conf", "--state-file=\(directory.path)/state"
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Running, its devices read: what nmcli says once NetworkManager answers.
        while now() - started < 60_000_000_000 {
            let answer = try NamespaceTesting.run(
                ["ip", "netns", "exec", host.name, "env", environment, "nmcli", "-t", "-f", "RUNNING", "general"],
                check: false)
            if answer.output.contains("running") { break }
            usleep(10_000)
        }
        startupMilliseconds = milliseconds(now() - started)
    }

    func stop() {
        stopProcess(process)
        stopProcess(bus)
    }
}
