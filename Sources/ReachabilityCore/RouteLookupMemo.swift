import IPAddresses
import Netlink

/// The kernel's answers to route lookups, each kept until a message says it may have
/// changed: an evaluation asks again only what the batch it follows could have moved.
/// An IPv4 route deletion leaves the IPv6 probe's answer as it was (the two families'
/// FIBs are apart), and a route that does not cover an address changes no lookup of it
/// (`RouteChange.covers`), so neither is asked again (BENCHMARKS.md §38).
///
/// Which answers a message may move is `RtnetlinkMessage.mayMoveRoute(to:)`; a re-read
/// of the state and a re-check (`PathEngine.lookAgain()`) forget everything. A failed
/// lookup is not kept.
final class RouteLookupMemo: KernelQueries {
    private let kernel: any KernelQueries
    /// Few, and looked through in order: an evaluation of the default path asks about the
    /// two probes and the resolvers, and a change's wake-up runs on cold caches, where
    /// looking through a short array costs less than hashing into a dictionary (BENCHMARKS.md §38).
    private var answers: [Answer] = []

    /// The answers kept at most: the default path's questions, with room for a NAT64's and a
    /// restricted monitor's. A daemon's watches of many hosts ask more; past it, all are
    /// forgotten, so a lookup never looks through more than this.
    static let capacity = 16

    private struct Answer {
        var destination: IPAddress
        var outputInterface: Int32?
        var matchingFIBEntry: Bool
        var result: Result<RouteLookup, RouteLookupFailure>
        /// False once a message may have moved it: asked again, in place, when next wanted.
        /// A route message then costs a plain loop over a few answers: nothing moved or allocated.
        var isCurrent = true
    }

    init(_ kernel: any KernelQueries) {
        self.kernel = kernel
    }

    /// Answers kept now and current (tests).
    var count: Int { answers.lazy.filter(\.isCurrent).count }

    func links() throws -> [Link] { try kernel.links() }

    func addresses() throws -> [InterfaceAddress] { try kernel.addresses() }

    func lookupRoute(to destination: IPAddress, outputInterface: Int32?, matchingFIBEntry: Bool) -> Result<RouteLookup, RouteLookupFailure>
    {
        var slot: Int?
        for index in answers.indices
        where answers[index].outputInterface == outputInterface && answers[index].matchingFIBEntry == matchingFIBEntry
            && answers[index].destination == destination
        {
            if answers[index].isCurrent { return answers[index].result }
            slot = index
            break
        }
        let result = kernel.lookupRoute(to: destination, outputInterface: outputInterface, matchingFIBEntry: matchingFIBEntry)
        let isCurrent = if case .failure(.failed) = result { false } else { true }
        if let slot {
            answers[slot].result = result
            answers[slot].isCurrent = isCurrent
        } else {
            if answers.count >= Self.capacity { answers.removeAll(keepingCapacity: true) }
            answers.append(
                Answer(
                    destination: destination, outputInterface: outputInterface, matchingFIBEntry: matchingFIBEntry, result: result,
                    isCurrent: isCurrent))
        }
        return result
    }

    /// Forgets the answers `message` may move.
    func forget(movedBy message: RtnetlinkMessage) {
        for index in answers.indices where answers[index].isCurrent && message.mayMoveRoute(to: answers[index].destination) {
            answers[index].isCurrent = false
        }
    }

    func forgetAll() {
        answers.removeAll(keepingCapacity: true)
    }
}

extension RtnetlinkMessage {
    /// Whether the kernel may answer a lookup of `destination` otherwise after this message:
    /// a route's, if its prefix contains the address (`RouteChange.covers`; the two families'
    /// tables are apart); an address's, for its family (the source the kernel picks, the
    /// routes it adds and flushes); a link's, a rule's or a next hop's, always.
    package func mayMoveRoute(to destination: IPAddress) -> Bool {
        switch self {
        case .link, .linkRemoved, .rule, .nextHop: true
        case let .address(address), let .addressRemoved(address): address.address.family == destination.family
        case let .route(change): change.covers(destination)
        case .routerOption: false
        }
    }
}
