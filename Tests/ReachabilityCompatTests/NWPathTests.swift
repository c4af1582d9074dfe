import ReachabilityClient
import ReachabilityCompat
import Testing

/// NWPath as Apple's Network framework spells it, made from reachd's documents: no kernel needed.
@Suite("ReachabilityCompat: NWPath from a reachd path")
struct NWPathTests {
    /// A document as reachd publishes it, with `changes` spliced over the wired one of docs/reachctl.md.
    static func path(
        status: String = "wired", reason: String = "null", vpn: String = "null", kind: String = "ethernet",
        expensive: Bool = false, usable: String = "\"192.0.2.53\""
    ) throws -> Path {
        try Path(
            json: """
                {"status":"\(status)","reason":\(reason),"interface":{"name":"eth0","index":2,"kind":"\(kind)"},"gateway":"192.0.2.1",
                 "ipv4":true,"ipv6":true,"expensive":\(expensive),"vpn":\(vpn),
                 "interfaces":[{"name":"eth0","index":2,"kind":"\(kind)","operstate":"up","up":true,"carrier":true,"addresses":["192.0.2.10/24"],
                   "connectivity":null},
                   {"name":"wg0","index":5,"kind":"wireguard","operstate":"unknown","up":true,"carrier":true,"addresses":["10.8.0.2/32"],
                   "connectivity":null}],
                 "trust":"none","connectivity":"unknown","portal":null,"initial":true,"since":"2026-11-22T10:00:00Z","source":"daemon",
                 "destination":null,
                 "routes":[{"destination":"198.41.0.4","status":"\(status)","reason":null,"interface":"eth0","gateway":"192.0.2.1","source":"192.0.2.10"},
                           {"destination":"2001:500:2f::f","status":"\(status)","reason":null,"interface":"eth0","gateway":"fe80::1%eth0","source":null}],
                 "dns":{"source":"resolv.conf","servers":["192.0.2.53"],"usable":[\(usable)]},
                 "capport":null,"ipv4-via":"native","clat":null,"nat64":null,"better-way-out":null}
                """)
    }

    @Test("a wired path is satisfied on wiredEthernet, with its gateways as endpoints and DNS")
    func wired() throws {
        let path = NWPath(try Self.path())
        #expect(path.status == .satisfied)
        #expect(path.usesInterfaceType(.wiredEthernet))
        #expect(!path.usesInterfaceType(.wifi) && !path.usesInterfaceType(.cellular) && !path.usesInterfaceType(.other))
        #expect(path.availableInterfaces.map(\.name) == ["eth0", "wg0"])
        #expect(path.availableInterfaces.map(\.type) == [.wiredEthernet, .other])
        #expect(path.gateways.map(\.debugDescription) == ["192.0.2.1:0", "fe80::1%eth0:0"])
        if case let .hostPort(.ipv6(address), _) = path.gateways[1] {
            #expect(address.interface?.index == 2)
        } else {
            Issue.record("not IPv6")
        }
        #expect(path.supportsIPv4 && path.supportsIPv6 && path.supportsDNS)
        #expect(!path.isExpensive && !path.isConstrained)
        #expect(path.localEndpoint == nil && path.remoteEndpoint == nil)
    }

    @Test("unreachable is unsatisfied (notAvailable); reachd's unknown is requiresConnection, never satisfied")
    func statuses() throws {
        let unreachable = NWPath(try Self.path(status: "unreachable", reason: "\"no-route\""))
        #expect(unreachable.status == .unsatisfied)
        #expect(unreachable.unsatisfiedReason == .notAvailable)
        #expect(unreachable.reachdPath.reason == .noRoute)
        #expect(NWPath(.unknown()).status == .requiresConnection)
        #expect(NWPath(try Self.path(usable: "")).supportsDNS == false)
    }

    @Test("under a VPN the path uses the medium it rides on and .other, as Apple reports utun")
    func vpn() throws {
        let path = NWPath(try Self.path(vpn: #"{"name":"wg0","index":5,"kind":"wireguard"}"#))
        #expect(path.usesInterfaceType(.other) && path.usesInterfaceType(.wiredEthernet))
        let cellular = NWPath(try Self.path(status: "cellular", kind: "cellular", expensive: true))
        #expect(cellular.usesInterfaceType(.cellular) && cellular.isExpensive)
        #expect(cellular.availableInterfaces.first?.type == .cellular)
    }

    @Test("equal when what NWPath shows is equal: reachd's connectivity or `since` alone is no change")
    func equality() throws {
        var other = try Self.path()
        other.connectivity = .full
        other.since = other.since.addingTimeInterval(60)
        #expect(NWPath(try Self.path()) == NWPath(other))
        #expect(NWPath(try Self.path()) != NWPath(try Self.path(status: "unreachable", reason: "\"no-route\"")))
    }

    @Test("a path and its words print as reachctl spells them")
    func printing() throws {
        #expect("\(try Self.path(status: "unreachable", reason: "\"no-route\""))" == "unreachable (no-route) dev eth0")
        #expect("\(UnreachableReason.noRoute)" == "no-route")
        #expect("\(try Self.path(vpn: #"{"name":"wg0","index":5,"kind":"wireguard"}"#))" == "wired dev eth0 vpn wg0")
        #expect("\(Path.NAT64.Source.routerAdvertisement)" == "router-advertisement")
    }
}
