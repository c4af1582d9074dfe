import Foundation
import Netlink
import ReachabilityBus
import ReachabilityContract
import ReachabilityCore

#if canImport(Glibc)
import Glibc
#endif

/// The floor under any daemon's path on this machine: a process of its own that
/// reads the kernel's message and at once relays it as one `StatusChanged` (carrying
/// a path document of reachd's size) over a unix socket to a bare sd-bus client.
/// No evaluation, no route lookup, no state, no event loop: between the raw listener
/// and this stage there are only a second process, a socket and sd-bus
/// (BENCHMARKS.md §27).
///
/// With `--bare-relay-lookups`, it first asks the kernel what a judging monitor asks on
/// the change, as the bare line with lookups does (`BareLine`), and ignores the
/// answers: the floor under any daemon that judges the path by the kernel's lookups
/// and relays it over the bus (BENCHMARKS.md §37).
enum BareRelay {
    static let flag = "--bare-relay"
    static let lookupsFlag = "--bare-relay-lookups"

    /// Runs in the benchmark's namespace (`ip netns exec … reachability-bench
    /// --bare-relay SOCKET`); prints `ready` once it listens, then serves one peer
    /// until it goes.
    static func run(socket path: String, lookingUp: Bool) throws -> Never {
        let subscription = try RtnetlinkSubscription()
        let query = try RtnetlinkQuery()
        guard let eth0 = try query.links().first(where: { $0.name == "eth0" })?.index else {
            throw BenchmarkError("the bare relay's namespace has no eth0")
        }
        let carried = SubscriberLatencyBenchmark.Change.allCases.map { $0.carried(eth0: eth0) }
        let options = MonitorOptions()
        let document = try ReachabilityMonitor.path(options: options).jsonString()
        let destinations = lookingUp ? BareLine.lookupDestinations(options) : []
        let socket = try PrivateSocket(path: path)
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        let connection = try socket.acceptBarePeer()
        var descriptors = [
            pollfd(fd: subscription.fileDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: connection.fileDescriptor, events: 0, revents: 0)
        ]
        while connection.isOpen {
            while try connection.process() {}
            descriptors[1].events = connection.pollRequest.events
            guard poll(&descriptors, 2, -1) > 0 else { continue }
            _ = try subscription.drain { message in
                // Never before Hello's reply: the client would drop the connection.
                if connection.mayBeSentUnasked, carried.contains(where: { $0(message) }) {
                    BareLine.lookUp(destinations, movedBy: message, query)
                    connection.emit(.statusChanged, "unreachable", document)
                }
                return false
            }
        }
        exit(0)
    }
}
