import Dispatch
import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import ReachabilityContract
import ReachabilityCore
import SDBus

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// reachd end to end: from just before the netlink request to the StatusChanged
/// signal received by a client on the private socket — in the same run as the
/// raw listener and an in-process monitor's callback — then the daemon's
/// memory and CPU when idle, and while a full routing table is loaded.
struct DaemonBenchmark {
    let repetitions: Int
    let routes: Int
    let idleSeconds: Int
    let reachd: String

    struct Result {
        var raw: [Double] = [], callback: [Double] = [], signal: [Double] = []
        var idleRSSKiB = 0, idlePSSKiB = 0, idleCPUTicks = 0
        var loadSeconds = 0.0, routesRSSKiB = 0, microsecondsPerRoute = 0.0
        var answersAfterLoad = false
    }

    func run() throws -> Result {
        let site = try BenchSite("rd")
        let host = site.host
        let (daemon, socket) = try site.startDaemon(reachd, logLevel: "warning")
        defer { stopProcess(daemon) }
        let subscriber = try SignalSubscriber(socket: socket)

        let namespace = NetworkNamespace(name: host.name)
        let (control, query, listener) = try namespace.perform {
            (try RtnetlinkControl(), try RtnetlinkQuery(), try RtnetlinkSubscription())
        }
        guard let eth0 = try query.links().first(where: { $0.name == "eth0" })?.index else { throw BenchmarkError("no eth0") }
        let raw = RawListener(listener)
        let (monitor, waiter) = try PathWaiter.monitor(host)
        defer { monitor.stop() }

        let gateway = IPAddress("10.1.0.1")!, any = IPAddress("0.0.0.0")!
        var result = Result()
        for index in 0..<repetitions * 2 {
            let add = index % 2 == 1
            let wanted = add ? "wired" : "unreachable"
            raw.arm { message in if case .route = message { return true } else { return false } }
            waiter.arm { $0.status.rawValue == wanted }
            subscriber.arm(wanted)
            let start = now()
            try control.route(add: add, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
            guard let signal = subscriber.wait(), let callback = waiter.wait(), let rawTime = raw.wait() else {
                throw BenchmarkError("change \(index) (\(wanted)): no signal, callback or raw message within 5 s")
            }
            result.signal.append(milliseconds(signal - start))
            result.callback.append(milliseconds(callback - start))
            result.raw.append(milliseconds(rawTime - start))
        }
        monitor.stop()
        raw.discard()

        // Idle: nothing changes; the daemon should not run at all.
        let pid = daemon.processIdentifier
        let ticksBefore = Self.ticks(of: pid)
        sleep(UInt32(idleSeconds))
        result.idleCPUTicks = Self.ticks(of: pid) - ticksBefore
        result.idleRSSKiB = residentKiB(of: pid)
        result.idlePSSKiB = Self.proportionalKiB(of: pid)

        // A full table: the daemon keeps no routes, so its memory should not move.
        func route(_ number: Int) -> String {
            let value = 0x6440_0000 + number
            return "route add \(value >> 24 & 255).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)/32 via 10.1.0.1 dev eth0"
        }
        let cpuBefore = cpuNanoseconds(of: pid)
        let load = now()
        try host.ipBatch((0..<routes).map(route))
        result.loadSeconds = Double(now() - load) / 1e9
        usleep(1_000_000)
        result.microsecondsPerRoute = Double(cpuNanoseconds(of: pid) - cpuBefore) / 1e3 / Double(max(routes, 1))
        result.routesRSSKiB = residentKiB(of: pid)
        subscriber.arm("unreachable")
        try control.route(add: false, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
        result.answersAfterLoad = subscriber.wait() != nil
        return result
    }

    /// utime + stime in clock ticks.
    static func ticks(of pid: Int32) -> Int {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        // After "pid (comm)": state is field 0; utime and stime are fields 11 and 12.
        guard fields.count > 12 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    static func proportionalKiB(of pid: Int32) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("Pss:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

/// A client of the private socket that timestamps StatusChanged signals.
final class SignalSubscriber: @unchecked Sendable {
    private let lock = NSLock()
    private var wanted: String?
    private var time: UInt64?
    private let semaphore = DispatchSemaphore(value: 0)

    init(socket: String) throws {
        // The daemon needs a moment to bind its socket.
        var attempt: BusConnection?
        for _ in 0..<200 where attempt == nil {
            attempt = try? BusConnection.connect(.address("unix:path=\(socket)"))
            if attempt == nil { usleep(25_000) }
        }
        guard let attempt else { throw BenchmarkError("reachd did not open \(socket)") }
        // Used by the subscriber's thread alone from here on.
        nonisolated(unsafe) let connection = attempt
        let ready = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            do {
                try connection.onSignal(.statusChanged, from: nil) { [self] status, _, _ in received(status) }
            } catch {
                print("reachability-bench: subscribing: \(error)")
            }
            ready.signal()
            while connection.isOpen {
                while (try? connection.process()) == true {}
                try? connection.wait(timeout: nil)
            }
        }
        ready.wait()
    }

    func arm(_ status: String) {
        lock.lock()
        wanted = status
        time = nil
        lock.unlock()
    }

    private func received(_ status: String) {
        let now = now()
        lock.lock()
        defer { lock.unlock() }
        guard status == wanted, time == nil else { return }
        time = now
        semaphore.signal()
    }

    func wait() -> UInt64? {
        guard semaphore.wait(timeout: .now() + 5) == .success else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return time
    }
}
