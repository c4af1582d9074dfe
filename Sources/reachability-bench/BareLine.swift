import Foundation
import IPAddresses
import Netlink
import ReachabilityCore

#if canImport(Glibc)
import Glibc
#endif

/// The floor under `reachctl watch --direct`'s line on this machine: a process of its
/// own, subscribed to the kernel as reachctl is, that writes a path document of
/// reachctl's size (made once, at start) with one `write(2)` on the kernel's message
/// that carries the change, as reachctl's monitor writes its line. With `--bare-line`:
/// no evaluation, no route lookup, no state; beside `ip monitor`, what is left is being
/// a second listener that writes a larger line (BENCHMARKS.md §29).
///
/// With `--bare-line-lookups`, it first asks the kernel what reachctl asks on the
/// change — the route to each probe address and to each resolver of resolv.conf that
/// the message may move (`RtnetlinkMessage.mayMoveRoute(to:)`) — and ignores the
/// answers: the floor under any monitor that judges the path by the kernel's lookups,
/// as this one's design requires (BENCHMARKS.md §30).
enum BareLine {
    static let flag = "--bare-line"
    static let lookupsFlag = "--bare-line-lookups"

    /// Runs in the benchmark's namespace (`ip netns exec … reachability-bench
    /// --bare-line`); prints `ready`, then a line per change until it is stopped.
    static func run(lookingUp: Bool) throws -> Never {
        let subscription = try RtnetlinkSubscription()
        let query = try RtnetlinkQuery()
        guard let eth0 = try query.links().first(where: { $0.name == "eth0" })?.index else {
            throw BenchmarkError("the bare line's namespace has no eth0")
        }
        let carried = SubscriberLatencyBenchmark.Change.allCases.map { $0.carried(eth0: eth0) }
        let options = MonitorOptions()
        var path = try ReachabilityMonitor.path(options: options)
        path.status = .unreachable
        let line = path.jsonLine()
        let destinations = lookingUp ? lookupDestinations(options) : []
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        var descriptor = [pollfd(fd: subscription.fileDescriptor, events: Int16(POLLIN), revents: 0)]
        while true {
            guard poll(&descriptor, 1, -1) > 0 else { continue }
            _ = try subscription.drain { message in
                guard carried.contains(where: { $0(message) }) else { return false }
                lookUp(destinations, movedBy: message, query)
                _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
                return false
            }
        }
    }

    /// What a monitor of the default path may ask the kernel: the route to each probe
    /// address and to each resolver of resolv.conf.
    static func lookupDestinations(_ options: MonitorOptions) -> [IPAddress] {
        [options.probeAddresses.v4, options.probeAddresses.v6]
            + (options.resolvConf.map { DNSServers.read(resolvConf: $0).servers.map(\.address) } ?? [])
    }

    /// Asks the kernel for each route `message` may move, as a monitor that keeps the
    /// other answers does, and ignores the answers: only their cost counts here.
    static func lookUp(_ destinations: [IPAddress], movedBy message: RtnetlinkMessage, _ query: RtnetlinkQuery) {
        for destination in destinations where message.mayMoveRoute(to: destination) { _ = query.lookupRoute(to: destination) }
    }
}
