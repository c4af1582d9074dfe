import EmbeddedKernel
import Foundation
import IPAddresses
import Netlink
import SystemCalls
import Testing

@testable import ReachabilityCore

/// The monitor's decisions on an embedded kernel (`Tests/EmbeddedKernel`): what is
/// evaluated, when it looks again, what is published — as any user, in
/// milliseconds, on a virtual clock. The namespace tests beside these prove the
/// kernel behaves as the embedded one is written to.
@Suite struct EmbeddedWatcherTests {
    /// A host with a loopback and an uplink (`eth0`, index 2) with an address and default route of each family.
    static func uplinkHost() throws -> (EmbeddedKernel, EmbeddedPathWatcher) {
        let kernel = EmbeddedKernel()
        kernel.addLoopback()
        kernel.addUplink(ipv6: true)
        let watcher = try EmbeddedPathWatcher(kernel: kernel) // subscribed after the set-up: it knows it from the dump
        return (kernel, watcher)
    }

    @Test func startsWithTheKernelsAnswer() throws {
        let (_, watcher) = try Self.uplinkHost()
        let path = try #require(watcher.path)
        #expect(path.status == .wired)
        #expect(path.interface?.name == "eth0")
        #expect(path.ipv4 && path.ipv6)
        #expect(watcher.published.count == 1, "the events of what the dump already held are no news")
    }

    /// IPv4 announces a removal before it unlinks the route: the look at once still finds
    /// it; the re-checks (0.25 ms, 5 ms, 50 ms, 0.5 s) find it gone, and then the timer rests.
    @Test func ipv4RemovalIsLookedAtAgainUntilTheRouteIsGone() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute4, unlinkedAfter: .milliseconds(1))
        watcher.read()
        #expect(watcher.path?.ipv4 == true, "at once the kernel still answers with the route")
        #expect(watcher.timerDeadline != nil)
        watcher.advance(by: .microseconds(250))
        #expect(watcher.path?.ipv4 == true, "0.25 ms: still linked")
        watcher.advance(by: .microseconds(4_750))
        #expect(watcher.path?.ipv4 == false, "5 ms: the removal is seen")
        #expect(watcher.path?.status == .wired, "IPv6 still carries the path")
        let offered = watcher.offers.count
        watcher.advance(by: .seconds(1))
        #expect(watcher.offers.count == offered + 2, "looked at twice more (50 ms, 0.5 s)")
        #expect(watcher.timerDeadline == nil, "and then never again")
        #expect(watcher.published.count == 2)
    }

    /// A next-hop object's removal takes the routes that use it with no route message, IPv4's
    /// after the next hop's own message: it is looked at at once and again, as a route's removal.
    @Test func aNextHopsRemovalIsLookedAtAgainUntilItsRoutesAreGone() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.removeNextHop(usedBy: [EmbeddedKernel.uplinkRoute6])
        watcher.read()
        #expect(watcher.path?.ipv6 == false, "the IPv6 default route went with its next hop")
        kernel.removeNextHop(usedBy: [EmbeddedKernel.uplinkRoute4], unlinkedAfter: .milliseconds(1))
        watcher.read()
        #expect(watcher.path?.status == .wired, "at once the kernel still answers with the IPv4 route")
        watcher.advance(by: .milliseconds(5))
        #expect(watcher.path?.status == .unreachable)
        #expect(watcher.path?.reason == .noRoute)
    }

    /// IPv6 unlinks before it announces: one look suffices, and no timer is armed.
    @Test func ipv6RemovalIsSeenAtOnce() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute6)
        watcher.read()
        #expect(watcher.path?.ipv6 == false)
        #expect(watcher.timerDeadline == nil)
    }

    /// `ip link set down` takes the IPv4 routes with no route message: the link message alone moves the path.
    @Test func linkDownWithoutRouteMessages() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.deleteRoute(EmbeddedKernel.uplinkRoute6)
        watcher.read()
        kernel.setLink(2, up: false)
        watcher.read()
        let path = try #require(watcher.path)
        #expect(path.status == .unreachable)
        #expect(path.reason == .linkDown)
    }

    /// The path's own link going down is acted on before the burst queued behind it is read.
    @Test func thePathsLinkGoingDownIsUrgent() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.setLink(2, up: false)
        for index in 0..<50 { // the IPv6 teardown and everything else that follows
            kernel.send([
                .addressRemoved(
                    InterfaceAddress(
                        interfaceIndex: 2, address: IPAddress("2001:db8::\(index + 100)")!,
                        prefixLength: 64))
            ])
        }
        watcher.read()
        let offer = try #require(watcher.offers.first { $0.path.status == .unreachable })
        #expect(offer.queued == 50, "evaluated with the whole burst still queued")
    }

    /// Two IPv4 uplinks: `eth0` as `uplinkHost()` has it, and `eth1` (index 3) with its default route at metric 100.
    static func twoUplinks() throws -> (EmbeddedKernel, EmbeddedPathWatcher) {
        let kernel = EmbeddedKernel()
        kernel.addLoopback()
        kernel.addUplink()
        kernel.addUplink("eth1", index: 3, subnet: "198.51.100", metric: 100)
        return (kernel, try EmbeddedPathWatcher(kernel: kernel))
    }

    /// The path's last IPv4 address going is acted on before what is queued behind it, and
    /// looked at again: the kernel announces it before it flushes the routes through the
    /// link, so the look at once can still find them (here for 1 ms).
    @Test func thePathsLastIPv4AddressGoingIsUrgentAndLookedAtAgainIfItsRoutesWereStillThere() throws {
        let (kernel, watcher) = try Self.twoUplinks()
        let second = InterfaceAddress(interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("192.0.2.3")!, prefixLength: 24)
        kernel.addAddress(second)
        watcher.read()
        kernel.removeAddress(second)
        kernel.addRoute(EmbeddedKernel.Route(IPAddress("10.9.0.0")!, prefixLength: 16, outputInterface: 3)) // queued behind it
        watcher.read()
        #expect(watcher.offers.last?.queued == 0, "another address is left: the burst is read whole first")
        #expect(watcher.timerDeadline != nil, "eth0 still answers, and routes from that address may be going: looked at again")
        watcher.advance(by: .seconds(1))
        #expect(watcher.path?.interface?.name == "eth0")

        kernel.removeAddress(
            InterfaceAddress(interfaceIndex: EmbeddedKernel.uplink, address: IPAddress("192.0.2.2")!, prefixLength: 24),
            routesUnlinkedAfter: .milliseconds(1))
        watcher.read()
        let offer = try #require(watcher.offers.first { $0.path.status == .unreachable })
        #expect(offer.queued == 1, "evaluated with the prefix route's removal still queued")
        #expect(watcher.path?.reason == .noAddress, "at once the kernel still answers with eth0's route")
        watcher.advance(by: .microseconds(250))
        #expect(watcher.path?.status == .unreachable, "0.25 ms: not flushed yet")
        watcher.advance(by: .microseconds(4_750))
        #expect(watcher.path?.status == .wired, "5 ms: the flush is seen")
        #expect(watcher.path?.interface?.name == "eth1")
    }

    /// A link going down is announced before its IPv4 routes are flushed: a look that still
    /// finds them is followed by others; one that finds them gone, by none.
    @Test func thePathsLinkGoingDownIsLookedAtAgainIfItsRoutesWereStillThere() throws {
        let (kernel, watcher) = try Self.twoUplinks()
        kernel.setLink(EmbeddedKernel.uplink, up: false, routesUnlinkedAfter: .milliseconds(1))
        watcher.read()
        #expect(watcher.path?.reason == .linkDown, "at once the kernel still answers with eth0's route")
        watcher.advance(by: .milliseconds(5))
        #expect(watcher.path?.interface?.name == "eth1")
        watcher.advance(by: .seconds(1))
        #expect(watcher.timerDeadline == nil)

        kernel.setLink(EmbeddedKernel.uplink, up: true, carrier: true)
        kernel.addRoute(EmbeddedKernel.uplinkRoute4)
        watcher.read()
        #expect(watcher.path?.interface?.name == "eth0")
        let evaluations = watcher.engine.statistics.evaluations
        kernel.setLink(EmbeddedKernel.uplink, up: false)
        watcher.read()
        #expect(watcher.path?.interface?.name == "eth1", "flushed before the look")
        #expect(watcher.timerDeadline == nil, "so no look again")
        #expect(watcher.engine.statistics.evaluations == evaluations + 1)
    }

    /// A burst is read whole and evaluated once.
    @Test func aBurstIsEvaluatedOnce() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        let before = watcher.engine.statistics.evaluations
        kernel.send(
            (0..<100).map {
                .address(
                    InterfaceAddress(
                        interfaceIndex: 2, address: IPAddress("2001:db8::\($0 + 100)")!,
                        prefixLength: 64))
            })
        watcher.read()
        #expect(watcher.engine.statistics.evaluations == before + 1)
        #expect(watcher.engine.statistics.messages >= 100)
    }

    /// A container host: pods' veths come and go with link-local and multicast routes
    /// only. Not one evaluation, not one lookup, nothing offered (docs/path.md).
    @Test func podsCostNoEvaluation() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        let (evaluations, lookups, offers) = (watcher.engine.statistics.evaluations, kernel.lookups, watcher.offers.count)
        for pod in Int32(10)..<30 {
            kernel.setLink(Link(index: pod, name: "veth\(pod)", kind: "veth", flags: [.up], operationalState: .lowerLayerDown))
            kernel.setLink(pod, carrier: true) // before the CNI enslaves it
            kernel.addAddress(
                InterfaceAddress(
                    interfaceIndex: pod, address: IPAddress("fe80::\(pod)")!, prefixLength: 64,
                    scope: AddressScope.link))
            kernel.addRoute(EmbeddedKernel.Route(IPAddress("fe80::")!, prefixLength: 64, outputInterface: pod, metric: 256))
            kernel.addRoute(EmbeddedKernel.Route(IPAddress("ff00::")!, prefixLength: 8, outputInterface: pod, metric: 256))
        }
        watcher.read()
        for pod in Int32(10)..<30 { kernel.removeLink(pod) }
        watcher.read()
        #expect(watcher.engine.statistics.evaluations == evaluations)
        #expect(kernel.lookups == lookups)
        #expect(watcher.offers.count == offers)
    }

    /// Carrier back on a link with a routed prefix re-evaluates (the kernel uses its
    /// `linkdown` routes again silently); on a link that never had one it does not.
    @Test func carrierBackMattersOnlyWhereARouteCouldReturn() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.setLink(Link(index: 3, name: "eth1"))
        kernel.addRoute(EmbeddedKernel.Route(IPAddress("198.51.100.0")!, prefixLength: 24, outputInterface: 3))
        kernel.setLink(Link(index: 4, name: "veth4", kind: "veth"))
        watcher.read()
        let evaluations = watcher.engine.statistics.evaluations
        kernel.setLink(4, carrier: false)
        kernel.setLink(4, carrier: true)
        watcher.read()
        #expect(watcher.engine.statistics.evaluations == evaluations)
        kernel.setLink(3, carrier: false)
        watcher.read()
        kernel.setLink(3, carrier: true)
        watcher.read()
        #expect(watcher.engine.statistics.evaluations == evaluations + 1)
    }

    /// An overrun: what was queued is lost, the state is dumped afresh, the path follows
    /// the dump, and the IPv4 re-checks run (a removal may have been among the lost).
    @Test func anOverrunIsAnsweredWithADump() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        let dumps = kernel.dumps
        kernel.setLink(2, up: false)
        kernel.overrun()
        watcher.read()
        #expect(kernel.dumps == dumps + 1)
        #expect(watcher.engine.statistics.overruns == 1)
        #expect(watcher.path?.status == .unreachable)
        #expect(watcher.timerDeadline != nil)
    }

    /// A dump that fails leaves the path `unknown` — never a guess — and is retried every second.
    @Test func aFailedDumpIsRetriedEverySecond() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.failingDumps = 3
        kernel.overrun()
        watcher.read() // the dump after the overrun fails, and so does the watcher's own attempt
        #expect(kernel.failingDumps == 1)
        #expect(watcher.path?.status == .unknown)
        #expect(watcher.log.contains { $0.contains("retrying in 1 s") })
        watcher.advance(by: .milliseconds(999))
        #expect(kernel.failingDumps == 1, "not tried again within the second")
        watcher.advance(by: .milliseconds(1))
        #expect(kernel.failingDumps == 0)
        #expect(watcher.path?.status == .unknown, "the third dump failed too")
        watcher.advance(by: .seconds(1))
        #expect(watcher.path?.status == .wired)
        #expect(watcher.path?.interface?.name == "eth0")
    }

    /// A policy rule can change any lookup's answer without a route message: evaluated at once.
    @Test func aRuleIsAlwaysEvaluated() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        let evaluations = watcher.engine.statistics.evaluations
        kernel.changeRule()
        watcher.read()
        #expect(watcher.engine.statistics.evaluations == evaluations + 1)
    }

    /// After a sleep nothing may have been read: the state is read afresh and what changed is published.
    @Test func resumeReadsTheStateAfresh() throws {
        let (kernel, watcher) = try Self.uplinkHost()
        kernel.setLink(2, up: false)
        watcher.resumed() // slept through the change: the loop read nothing
        #expect(watcher.path?.status == .unreachable)
    }

    /// Interface changes are handed over per batch, each interface once, as it is after the batch.
    @Test func interfaceChangesAreHandedOverOncePerBatch() throws {
        let (kernel, _) = try Self.uplinkHost()
        let watcher = try EmbeddedPathWatcher(kernel: kernel, tracksInterfaces: true)
        kernel.setLink(Link(index: 5, name: "eth5"))
        kernel.setLink(5, carrier: false)
        kernel.setLink(5, carrier: true)
        watcher.read()
        let changes = watcher.interfaceChanges.flatMap { $0 }.filter { $0.interface.name == "eth5" }
        #expect(changes.count <= 2, "per read, not per message: \(changes.count)")
        #expect(changes.last?.interface.carrier == true)
    }
}

/// What the embedded kernel delivers is what the real one sends: messages recorded from
/// a kernel (the fuzzers' seeds, FuzzTesting/make-seeds.py) read the same after being
/// written again by `RtnetlinkEncoder`.
@Suite struct RtnetlinkEncoderTests {
    static let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../FuzzTesting/Corpus/netlink").standardizedFileURL

    @Test func recordedKernelMessagesReadTheSameWhenWrittenAgain() throws {
        var compared = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.seeds.path) where name.hasPrefix("dump-") {
            let recorded = [UInt8](try Data(contentsOf: Self.seeds.appendingPathComponent(name)))
            for message in RtnetlinkDatagram.decode(recorded).messages {
                let again = RtnetlinkDatagram.decode(RtnetlinkEncoder.message(message)).messages
                #expect(again.count == 1)
                #expect(again.first.map { "\($0)" } == "\(message)", "\(name)")
                compared += 1
            }
        }
        #expect(compared >= 10, "the seeds hold links, addresses, routes and rules")
    }
}
