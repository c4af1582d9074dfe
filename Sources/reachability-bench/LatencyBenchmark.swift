import Dispatch
import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import ReachabilityCore

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// Latency from just before the netlink request that changes the state to
/// (a) the message that carries the change (RTM_DELROUTE, RTM_NEWROUTE, the
/// RTM_NEWLINK without IFF_UP, RTM_DELADDR) reaching a raw netlink listener in
/// the same namespace — `ip link set down` sends route and address removals
/// before the link message, so "the first message" would flatter the raw side —
/// and (b) the monitor's onChange callback, which has drained, re-evaluated
/// with RTM_GETROUTE and hopped to the callback queue.
struct LatencyBenchmark {
    struct Sample { var raw: [Double] = []; var monitor: [Double] = [] }
    let repetitions: Int
    /// Without it, the monitor alone: on 2 cores the raw listener competes for the CPU.
    let withRawListener: Bool

    /// Microseconds of one evaluation of the default path (two RTM_GETROUTE round trips included).
    private(set) var evaluationMicroseconds = 0.0

    mutating func run() throws -> [(String, Sample)] {
        let host = try TestNamespace("bench-lat")
        let router = try TestNamespace("bench-rtr")
        defer { host.remove(); router.remove() }
        try host.addUplink(router: router)
        let namespace = NetworkNamespace(name: host.name)
        let (control, query, listener) = try namespace.perform {
            (try RtnetlinkControl(), try RtnetlinkQuery(), try RtnetlinkSubscription())
        }
        guard let eth0 = try query.links().first(where: { $0.name == "eth0" })?.index else {
            throw BenchmarkError("no eth0 in the benchmark namespace")
        }
        do {
            // Closed before the latency runs: an engine nobody drains is a slow listener,
            // and a congested listener makes the kernel yield after every broadcast.
            let engine = try PathEngine(options: MonitorOptions(networkNamespace: host.path))
            let evaluations = 10_000
            let evaluationStart = now()
            // Each asks the kernel everything, as the first look after a link's message does
            // (the engine keeps answers no message has moved: RouteLookupMemo).
            for _ in 0..<evaluations {
                engine.lookAgain()
                _ = engine.evaluateDefaultPath()
            }
            evaluationMicroseconds = Double(now() - evaluationStart) / 1e3 / Double(evaluations)
        }

        let raw: RawListener? = withRawListener ? RawListener(listener) : nil
        let (monitor, waiter) = try PathWaiter.monitor(host)
        defer { monitor.stop() }

        let gateway = IPAddress("10.1.0.1")!, local = IPAddress("10.1.0.2")!, any = IPAddress("0.0.0.0")!
        func addDefault() throws { try control.route(add: true, destination: any, prefixLength: 0, gateway: gateway, interface: eth0) }
        func deleteDefault() throws { try control.route(add: false, destination: any, prefixLength: 0, gateway: gateway, interface: eth0) }

        var results: [String: Sample] = [:]
        func measure(
            _ name: String, _ expectation: @escaping @Sendable (Path) -> Bool,
            carriedBy message: @escaping (RtnetlinkMessage) -> Bool, _ change: () throws -> Void
        ) throws {
            raw?.arm(message)
            waiter.arm(expectation)
            let start = now()
            try change()
            guard let callback = waiter.wait() else {
                let fresh = try ReachabilityMonitor.path(options: MonitorOptions(networkNamespace: host.path))
                throw BenchmarkError(
                    "\(name): no callback within 5 s; the monitor says \(monitor.currentPath?.status.rawValue ?? "-"), a fresh look says \(fresh.status.rawValue)"
                )
            }
            if let raw {
                guard let rawTime = raw.wait() else { throw BenchmarkError("\(name): the raw listener saw nothing within 5 s") }
                results[name, default: Sample()].raw.append(milliseconds(rawTime - start))
            }
            results[name, default: Sample()].monitor.append(milliseconds(callback - start))
        }
        func restore() throws {
            try? control.setLink(eth0, up: true)
            try? control.address(add: true, local, prefixLength: 24, interface: eth0)
            try? addDefault()
            if monitor.currentPath?.status != .wired {
                waiter.arm({ $0.status == .wired })
                _ = waiter.wait()
            }
            usleep(2_000) // let the raw listener's trailing events pass before the next arm
            raw?.discard()
        }
        for _ in 0..<repetitions {
            try measure(
                "route delete", { $0.reason == .noRoute },
                carriedBy: {
                    if case let .route(change) = $0 { change.removed && change.destinationPrefixLength == 0 } else { false }
                }, deleteDefault)
            try measure(
                "route add", { $0.status == .wired },
                carriedBy: {
                    if case let .route(change) = $0 { !change.removed && change.destinationPrefixLength == 0 } else { false }
                }, addDefault)
            try restore()
            try measure(
                "link down", { $0.reason == .linkDown },
                carriedBy: {
                    if case let .link(link) = $0 { link.index == eth0 && !link.isUp } else { false }
                }
            ) { try control.setLink(eth0, up: false) }
            try restore()
            try measure(
                "address delete", { $0.reason == .noAddress },
                carriedBy: {
                    if case let .addressRemoved(address) = $0 { address.address == local } else { false }
                }
            ) { try control.address(add: false, local, prefixLength: 24, interface: eth0) }
            try restore()
        }
        return ["route delete", "route add", "link down", "address delete"].map { ($0, results[$0] ?? Sample()) }
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Waits for the monitor's callback to deliver a path that meets an expectation.
final class PathWaiter: @unchecked Sendable {
    /// A monitor of `host`'s namespace feeding a waiter, started and wired.
    static func monitor(_ host: TestNamespace) throws -> (ReachabilityMonitor, PathWaiter) {
        let waiter = PathWaiter()
        let monitor = ReachabilityMonitor(options: try MonitorOptions(networkNamespace: host.path))
        monitor.onChange = { waiter.received($0) }
        try monitor.start()
        _ = waiter.wait(for: { $0.status == .wired })
        return (monitor, waiter)
    }

    private let lock = NSLock()
    private var expectation: (@Sendable (Path) -> Bool)?
    private var time: UInt64?
    private let semaphore = DispatchSemaphore(value: 0)

    func arm(_ expectation: @escaping @Sendable (Path) -> Bool) {
        lock.lock(); defer { lock.unlock() }
        self.expectation = expectation
        time = nil
        while semaphore.wait(timeout: .now()) == .success {}
    }

    func received(_ path: Path) {
        let time = now()
        lock.lock(); defer { lock.unlock() }
        guard let expectation, expectation(path) else { return }
        self.expectation = nil
        self.time = time
        semaphore.signal()
    }

    func wait(for expectation: (@Sendable (Path) -> Bool)? = nil) -> UInt64? {
        if let expectation { arm(expectation) }
        guard semaphore.wait(timeout: .now() + 5) == .success else { return nil }
        lock.lock(); defer { lock.unlock() }
        return time
    }
}

/// A minimal netlink listener: the time it reads the message that carries a change.
final class RawListener: @unchecked Sendable {
    private let subscription: RtnetlinkSubscription
    private let lock = NSLock()
    private var matcher: ((RtnetlinkMessage) -> Bool)?
    private var time: UInt64?
    private let semaphore = DispatchSemaphore(value: 0)

    init(_ subscription: RtnetlinkSubscription) {
        self.subscription = subscription
        let thread = Thread { [self] in
            var descriptor = pollfd(fd: self.subscription.fileDescriptor, events: Int16(POLLIN), revents: 0)
            while true {
                guard poll(&descriptor, 1, -1) > 0 else { continue }
                _ = try? self.subscription.drain { message in
                    let time = now()
                    lock.lock()
                    defer { lock.unlock() }
                    guard let matcher, matcher(message) else { return false }
                    self.matcher = nil
                    self.time = time
                    semaphore.signal()
                    return false
                }
            }
        }
        thread.start()
    }

    func arm(_ matcher: @escaping (RtnetlinkMessage) -> Bool) {
        lock.lock(); defer { lock.unlock() }
        self.matcher = matcher
        time = nil
        while semaphore.wait(timeout: .now()) == .success {}
    }

    func discard() { lock.lock(); matcher = nil; lock.unlock() }

    func wait() -> UInt64? {
        guard semaphore.wait(timeout: .now() + 5) == .success else { return nil }
        lock.lock(); defer { lock.unlock() }
        return time
    }
}
