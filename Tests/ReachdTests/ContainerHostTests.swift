import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A container host in miniature (docs/path.md, "Available interfaces"): pods come
/// and go as veth pairs on a bridge, in the CNI bridge plugin's order. What each
/// subscriber receives is counted, not timed: a subscriber of the path receives
/// nothing for a pod, a subscriber of interfaces receives only the pods' interfaces,
/// and nothing holds a queue that grows with the churn. (`make bench`, section 12,
/// measures the same at 200 to 5,000 interfaces.)
@Suite("container hosts: a pod costs a parse, and reaches only who asked", .serialized, .needsNamespaces, .ownThreads)
struct ContainerHostTests {
    /// A command's stdout lines in a file; stderr in another.
    final class Recorder {
        let process = Process()
        let file: URL
        let errors: URL

        init(_ name: String, _ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws {
            file = directory.appendingPathComponent("\(name).out")
            errors = directory.appendingPathComponent("\(name).err")
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = environment.map { "\($0)=\($1)" } + arguments
            process.standardOutput = try FileHandle(forWritingTo: file)
            process.standardError = try FileHandle(forWritingTo: errors)
            try process.run()
        }

        var lines: [Substring] { ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n") }
        var stderr: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }

        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// `pods` pods created, then deleted: host end `vh<n>` onto `cni0`, pod end `vp<n>`.
    static func churn(_ namespace: TestNamespace, pods: Range<Int>) throws {
        var commands: [String] = []
        for pod in pods {
            commands += [
                "link add name vh\(pod) type veth peer name vp\(pod)", "link set dev vh\(pod) up",
                "link set dev vp\(pod) up", "link set dev vh\(pod) master cni0"
            ]
        }
        commands += pods.map { "link del dev vh\($0)" }
        _ = try run(["ip", "-n", namespace.name, "-batch", "-"], input: commands.joined(separator: "\n") + "\n")
    }

    /// The node: an uplink with the default route, and a CNI bridge with one pod that stays.
    static func node(_ ns: [TestNamespace]) throws {
        try ns[0].addUplink(router: ns[1])
        try ns[0].ip("link add name cni0 type bridge")
        try ns[0].ip("addr add 10.88.0.1/16 dev cni0")
        try ns[0].ip("link set dev cni0 up")
        try churnStay(ns[0])
    }

    /// The bridge's link-local address and its operational state "up" come a moment after
    /// its first port (the kernel's link watch): real changes, to be over before the churn.
    static func bridgeSettled(_ daemon: DaemonProcess) async -> Bool {
        await eventually {
            let bridge = (try? ReachabilityClient(endpoint: .address(daemon.address)).blocking.currentPath())?.interfaces.first {
                $0.name == "cni0"
            }
            return bridge?.addresses.count == 2 && bridge?.operstate == "up"
        }
    }

    private static func churnStay(_ namespace: TestNamespace) throws {
        for command in [
            "link add name vhstay type veth peer name vpstay", "link set dev vhstay up", "link set dev vpstay up",
            "link set dev vhstay master cni0"
        ] {
            try namespace.ip(command)
        }
    }

    @Test(
        "reachd: 100 pods send a path subscriber nothing, an interface subscriber only their interfaces; the path still moves",
        .timeLimit(.minutes(3)))
    func daemon() async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdpods", "router") { ns in
                try Self.node(ns)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch)
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await Self.bridgeSettled(daemon))
                let paths = try Recorder("paths", [DaemonProcess.reachctl, "watch", "--json", "--bus", daemon.address], in: scratch)
                defer { paths.stop() }
                let interfaces = try Recorder(
                    "interfaces", [DaemonProcess.reachctl, "watch", "--interfaces", "--json", "--bus", daemon.address],
                    in: scratch)
                defer { interfaces.stop() }
                let before = try await ReachabilityClient(endpoint: .address(daemon.address)).interfaces()
                #expect(await eventually { paths.lines.count == 1 && interfaces.lines.count == before.count })
                let initial = interfaces.lines.compactMap { try? InterfaceChange(json: String($0)) }
                #expect(initial.allSatisfy(\.initial) && initial.map(\.interface.name) == before.map(\.interface.name))
                // The document lists what could carry a path: the uplink and the bridge, no port.
                let document = try await ReachabilityClient(endpoint: .address(daemon.address)).currentPath()
                #expect(Set(document.interfaces.map(\.name)) == ["eth0", "cni0"], "\(document.interfaces.map(\.name))")

                try Self.churn(ns[0], pods: 0..<100)
                let podNames = Set((0..<100).flatMap { ["vh\($0)", "vp\($0)"] })
                // Every pod interface's removal reaches the interface subscriber…
                #expect(
                    await eventually(.seconds(20)) {
                        let removed = interfaces.lines.compactMap { try? InterfaceChange(json: String($0)) }.filter(\.removed)
                        return Set(removed.map(\.interface.name)) == podNames
                    }, "\(interfaces.lines.suffix(5))")
                try await Task.sleep(for: .milliseconds(300))
                let changes = interfaces.lines.dropFirst(before.count).compactMap { try? InterfaceChange(json: String($0)) }
                // …and nothing else: each line is one pod interface, never the inventory again.
                let others = changes.filter { !podNames.contains($0.interface.name) }
                #expect(others.isEmpty, "\(others.map(\.interface.name))")
                #expect(changes.count <= 100 * 2 * 5, "\(changes.count) lines for 100 pods")
                // The path subscriber was sent nothing: no pod changed the path.
                #expect(paths.lines.count == 1, "\(paths.lines.dropFirst())")

                // The path still moves, at once, during a churn.
                try ns[0].ip("route del default")
                #expect(
                    await eventually {
                        paths.lines.last.flatMap { try? Path(json: String($0)) }?.status == .unreachable
                    }, "\(paths.lines.suffix(2))")
            }
        }
    }

    @Test(
        "on a bus: InterfaceChanged reaches only a client that called WatchInterfaces; reachd renders none once it is gone",
        .timeLimit(.minutes(3)), .needsSystemBusName)
    func bus() async throws {
        try await withScratch { scratch in
            chmod(scratch.path, 0o755)
            let bus = try TestSystemBus(directory: scratch)
            defer { bus.stop() }
            let config = scratch.appendingPathComponent("reachd.toml")
            try "[metrics]\nlisten = \"127.0.0.1:9748\"\n".write(to: config, atomically: true, encoding: .utf8)
            try await withNamespaces("rdpodbus", "router") { ns in
                try Self.node(ns)
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", bus.address, "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await Self.bridgeSettled(daemon))
                let paths = try Recorder("bus-paths", [DaemonProcess.reachctl, "watch", "--json", "--bus", bus.address], in: scratch)
                defer { paths.stop() }
                #expect(await eventually { paths.lines.count == 1 })
                // What reachd sends, counted at the bus (each signal with its first argument), not after a client
                // dropped repeats; and the evaluations it made, read from its own counter.
                let sent = try Recorder(
                    "bus-signals",
                    [
                        "stdbuf", "-oL", "dbus-monitor", "--address", bus.address,
                        "type='signal',interface='io.reachd.Reachability1'"
                    ], in: scratch)
                defer { sent.stop() }
                // A monitor gives up its unique name when it starts monitoring: from then on it sees every signal.
                #expect(await eventually { sent.lines.contains { $0.hasSuffix("member=NameLost") } }, "\(sent.lines) \(sent.stderr)")
                func signals(_ member: String) -> [Substring] {
                    let lines = sent.lines
                    return lines.indices.filter { lines[$0].hasPrefix("signal ") && lines[$0].hasSuffix("member=\(member)") }.map {
                        header in
                        lines.dropFirst(header + 1).first.flatMap { $0.firstMatch(of: /string "([^"]*)"/)?.output.1 } ?? ""
                    }
                }
                func evaluations() -> Double? { metricValue("reachd_path_evaluations_total", in: ns[0].scrapeMetrics()) }
                #expect(!daemon.log.contains("interface changes: kept"), "nobody watches yet: \(daemon.log.suffix(1000))")
                let interfaces = try Recorder(
                    "bus-interfaces", [DaemonProcess.reachctl, "watch", "--interfaces", "--json", "--bus", bus.address],
                    in: scratch)
                #expect(await eventually { daemon.log.contains("interface changes: kept") }, "\(daemon.log.suffix(1000))")
                let inventory = try await ReachabilityClient(endpoint: .address(bus.address)).interfaces().count
                #expect(await eventually { interfaces.lines.count == inventory })
                let evaluationsBefore = try #require(evaluations())
                let (statusBefore, interfaceBefore) = (signals("StatusChanged").count, signals("InterfaceChanged").count)
                try Self.churn(ns[0], pods: 0..<20)
                let podNames = Set((0..<20).flatMap { ["vh\($0)", "vp\($0)"] })
                #expect(
                    await eventually(.seconds(20)) {
                        Set(interfaces.lines.compactMap { try? InterfaceChange(json: String($0)) }.filter(\.removed).map(\.interface.name))
                            == podNames
                    }, "\(interfaces.lines.suffix(5))")
                try await Task.sleep(for: .milliseconds(300))
                #expect(paths.lines.count == 1, "the path's subscriber on the bus was sent nothing: \(paths.lines.dropFirst())")
                // At the bus: no StatusChanged at all; InterfaceChanged for the pods' interfaces only, at least one per
                // line the watcher printed (its buffer keeps the latest entry per interface), a few per interface at most.
                #expect(signals("StatusChanged").count == statusBefore, "\(signals("StatusChanged").count - statusBefore) sent")
                let interfaceSignals = signals("InterfaceChanged").dropFirst(interfaceBefore)
                #expect(
                    Set(interfaceSignals.map(String.init)).isSubset(of: podNames),
                    "\(Set(interfaceSignals.map(String.init)).subtracting(podNames))")
                #expect(
                    interfaceSignals.count >= interfaces.lines.count - inventory && interfaceSignals.count <= 20 * 2 * 5,
                    "\(interfaceSignals.count) sent, \(interfaces.lines.count - inventory) printed")
                // And reachd did not evaluate the path once for 20 pods.
                #expect(
                    evaluations() == evaluationsBefore,
                    "\(String(describing: evaluations())) evaluations after, \(evaluationsBefore) before")
                // The watcher leaves: its unique name loses its owner, and reachd stops keeping changes.
                interfaces.stop()
                try Self.churn(ns[0], pods: 20..<21)
                #expect(await eventually { daemon.log.contains("interface changes: not kept") }, "\(daemon.log.suffix(1000))")
            }
        }
    }
}
