import Dispatch
import Foundation
import IPAddresses
import NamespaceTesting
import Netlink

#if canImport(Glibc)
import Glibc
import SystemCalls
#endif

/// How long after the kernel announces a removal a lookup still sees what was removed
/// (BENCHMARKS.md §20): what the monitor's first re-check after an IPv4 route removal
/// (`PathEngine.recheckDelays`) is chosen from.
///
/// One thread deletes the default route (or the uplink's address, or sets the link down)
/// with a netlink request, as `ip` does; another, subscribed to the kernel's messages as
/// the monitor is, reads the announcement and at once looks the default path up, again and
/// again, until the lookup no longer leaves by the uplink. Each removal gives whether the
/// first lookup still saw it, and for how long after the announcement was read.
struct DeletionWindowBenchmark {
    let removals: Int

    struct Window {
        var stillSeen = 0
        var count = 0
        /// Microseconds from reading the announcement to the first lookup that no longer saw the removed state,
        /// for the removals whose first lookup still saw it.
        var microseconds: [Double] = []
        var lookups: [Double] = []
    }

    func run() throws -> [(String, Window)] {
        let host = try TestNamespace("bench-win")
        let router = try TestNamespace("bench-winr")
        defer { host.remove(); router.remove() }
        try host.addUplink(router: router)
        let namespace = NetworkNamespace(name: host.name)
        let (control, query, listener, removing) = try namespace.perform {
            (try RtnetlinkControl(), try RtnetlinkQuery(), try RtnetlinkSubscription(), RemovingSocket(try RtnetlinkControl()))
        }
        guard let eth0 = try query.links().first(where: { $0.name == "eth0" })?.index else {
            throw BenchmarkError("no eth0 in the benchmark namespace")
        }
        let gateway = IPAddress("10.1.0.1")!, any = IPAddress("0.0.0.0")!, local = IPAddress("10.1.0.2")!
        let probe = IPAddress("198.51.100.7")!
        let remover = DispatchQueue(label: "remover")

        func leavesByUplink() -> Bool {
            if case let .success(route) = query.lookupRoute(to: probe), route.outputInterface == eth0 { return true }
            return false
        }

        /// Restores the state, then removes it on the other thread and times the window.
        func measure(
            restore: () throws -> Void, remove: @escaping @Sendable (RtnetlinkControl) throws -> Void,
            announced: @escaping (RtnetlinkMessage) -> Bool
        ) throws -> Window {
            var window = Window()
            for _ in 0..<removals {
                try restore()
                var waited = 0
                while !leavesByUplink() {
                    usleep(100)
                    waited += 1
                    if waited > 20_000 { throw BenchmarkError("the uplink never carried the path again") }
                }
                _ = try listener.drain { _ in false }
                let done = DispatchSemaphore(value: 0)
                remover.async {
                    try? remove(removing.control)
                    done.signal()
                }
                var descriptor = pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0)
                var read: UInt64?
                while read == nil {
                    guard poll(&descriptor, 1, 2_000) > 0 else { throw BenchmarkError("no announcement within 2 s") }
                    // Looked up at once, as the monitor does after the batch that carries it.
                    _ = try listener.drain { message in
                        if read == nil, announced(message) { read = now() }
                        return read != nil
                    }
                }
                var lookups = 0
                while true {
                    let before = now()
                    let seen = leavesByUplink()
                    window.lookups.append(Double(now() - before) / 1e3)
                    lookups += 1
                    if !seen { break }
                }
                if lookups > 1 {
                    window.stillSeen += 1
                    window.microseconds.append(Double(now() - read!) / 1e3)
                }
                window.count += 1
                done.wait()
            }
            return window
        }

        let route = try measure(
            restore: { try? control.route(add: true, destination: any, prefixLength: 0, gateway: gateway, interface: eth0) },
            remove: { try $0.route(add: false, destination: any, prefixLength: 0, gateway: gateway, interface: eth0) },
            announced: { if case let .route(change) = $0 { change.removed && change.destinationPrefixLength == 0 } else { false } })
        let address = try measure(
            restore: {
                try? control.address(add: true, local, prefixLength: 24, interface: eth0)
                try? control.route(add: true, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
            },
            remove: { try $0.address(add: false, local, prefixLength: 24, interface: eth0) },
            announced: { if case let .addressRemoved(removed) = $0 { removed.address == local } else { false } })
        try? control.address(add: true, local, prefixLength: 24, interface: eth0)
        let link = try measure(
            restore: {
                try control.setLink(eth0, up: true)
                try? control.route(add: true, destination: any, prefixLength: 0, gateway: gateway, interface: eth0)
            },
            remove: { try $0.setLink(eth0, up: false) },
            announced: { if case let .link(link) = $0 { link.index == eth0 && !link.isUp } else { false } })
        return [("route deleted", route), ("address deleted", address), ("link set down", link)]
    }
}

/// The remover thread's own socket: used there only, one removal at a time.
private final class RemovingSocket: @unchecked Sendable {
    let control: RtnetlinkControl
    init(_ control: RtnetlinkControl) { self.control = control }
}

func runDeletionWindowBenchmark(removals: Int) throws {
    print("== 20. After the announcement: how long a lookup still sees what was removed (µs), \(removals) removals each")
    print("   read = the announcement read by a listener as the monitor reads it; then RTM_GETROUTE again and again;")
    print("   the window: from the read to the first lookup that no longer sees it, where the first still did")
    print("   removal           first lookup still sees it   window p50   p90      p99      p99.9    max      one lookup p50")
    for (name, window) in try DeletionWindowBenchmark(removals: removals).run() {
        let share = Double(window.stillSeen) / Double(max(1, window.count)) * 100
        let seen = "\(window.stillSeen) of \(window.count) (\(format(share, 1)) %)"
        guard !window.microseconds.isEmpty else {
            print(
                "   \(name.padding(toLength: 16, withPad: " ", startingAt: 0))  \(seen)  (no window)  one lookup p50 \(format(percentile(window.lookups, 50), 1))"
            )
            continue
        }
        print(
            "   \(name.padding(toLength: 16, withPad: " ", startingAt: 0))  \(seen.padding(toLength: 27, withPad: " ", startingAt: 0))  \(format(percentile(window.microseconds, 50), 1).padding(toLength: 11, withPad: " ", startingAt: 0))  \(format(percentile(window.microseconds, 90), 1).padding(toLength: 7, withPad: " ", startingAt: 0))  \(format(percentile(window.microseconds, 99), 1).padding(toLength: 7, withPad: " ", startingAt: 0))  \(format(percentile(window.microseconds, 99.9), 1).padding(toLength: 7, withPad: " ", startingAt: 0))  \(format(window.microseconds.max() ?? 0, 1).padding(toLength: 7, withPad: " ", startingAt: 0))  \(format(percentile(window.lookups, 50), 1))"
        )
    }
}
