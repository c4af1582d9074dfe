import IPAddresses
import ReachabilityCore
import SDBus
import SystemCalls

/// RFC 7050: the network's NAT64 prefix from its DNS64, where no router announces one
/// and the config names none. `ipv4only.arpa` has only IPv4 addresses (192.0.0.170 and
/// .171): an IPv6 answer for it is a DNS64's synthesis, and where the well-known address
/// sits in it gives the prefix and its length. Asked through the system resolver (the
/// path's own resolvers, as every application on the host asks), off the loop, once per
/// network: when IPv6 leaves by another interface on a path without IPv4 of its own,
/// after the link was lost (down, no carrier, no address: another network may follow),
/// and after the host slept — not on every flap of a route.
final class NAT64Discovery {
    private struct Answer: Sendable {
        var generation: Int
        var prefix: NAT64Prefix?
        /// Why there is no answer: the resolver's error, or an answer that is no synthesis.
        var failure: String?
    }

    private let mailbox: Mailbox<Answer>
    private var answers: EventLoop.Watch?
    private let found: (_ prefix: NAT64Prefix?, _ interface: Int32) -> Void
    private var generation = 0
    /// The interface the running (or last) query was made for.
    private var asked: Int32?

    /// - Parameter found: on the loop, with the prefix the DNS64 used (nil: no synthesis)
    ///   and the interface that carried IPv6 when it was asked.
    init(loop: EventLoop, log: Log, found: @escaping (_ prefix: NAT64Prefix?, _ interface: Int32) -> Void) throws {
        mailbox = try Mailbox()
        self.found = found
        answers = try mailbox.deliver(on: loop) { [unowned self] posted in
            for answer in posted where answer.generation == generation {
                guard let asked else { continue }
                if let failure = answer.failure { log.info("nat64: no DNS64 prefix (RFC 7050): \(failure)") }
                self.found(answer.prefix, asked)
            }
        }
    }

    /// A published path: asks when IPv6 leaves by another interface on a path without
    /// IPv4 of its own, and nothing better than DNS64 says where its NAT64 is.
    func observe(_ path: Path) {
        if let reason = path.reason, [.linkDown, .noCarrier, .noAddress, .noInterface].contains(reason) {
            asked = nil // the link was lost: the next one may be another network
            return
        }
        let candidate = path.ipv6 && path.ipv4Via != .native && (path.nat64 == nil || path.nat64?.source == .dns64)
        guard candidate, let interface = path.interface.map({ Int32($0.index) }), asked != interface else { return }
        ask(on: interface)
    }

    /// The host slept: the network may be another one; ask again on the current interface.
    func askAgain() {
        if let asked { ask(on: asked) }
    }

    private func ask(on interface: Int32) {
        asked = interface
        generation += 1
        let generation = generation
        let mailbox = mailbox
        DedicatedThread.detach(.nat64) {
            do {
                let answers = try HostResolver.resolve("ipv4only.arpa", family: .v6)
                let prefix = answers.lazy.compactMap(NAT64Prefix.discovered(from:)).first
                mailbox.post(
                    Answer(
                        generation: generation, prefix: prefix,
                        failure: prefix == nil
                            ? "ipv4only.arpa has no synthesised address (\(answers.map(\.description).joined(separator: " ")))" : nil))
            } catch {
                mailbox.post(Answer(generation: generation, prefix: nil, failure: "\(error)"))
            }
        }
    }
}
