import Foundation
import IPAddresses
import NamespaceTesting
import Netlink
import Reachability
import SystemCalls
import TestTraits
import Testing

@Suite("NAT64 prefixes (RFC 6052, 7050, 8781) and the document's nat64, clat and ipv4-via")
struct NAT64PrefixTests {
    /// RFC 6052 §2.4's table: 192.0.2.33 in a prefix of each length.
    static let rfc6052Examples = [
        ("2001:db8::/32", "2001:db8:c000:221::"),
        ("2001:db8:100::/40", "2001:db8:1c0:2:21::"),
        ("2001:db8:122::/48", "2001:db8:122:c000:2:2100::"),
        ("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"),
        ("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"),
        ("2001:db8:122:344::/96", "2001:db8:122:344::c000:221"),
        ("64:ff9b::/96", "64:ff9b::c000:221")
    ]

    @Test("synthesis and extraction as RFC 6052 §2.4's table writes them", arguments: rfc6052Examples)
    func rfc6052(prefix text: String, synthesized: String) throws {
        let prefix = try #require(NAT64Prefix(text))
        let ipv4 = IPAddress("192.0.2.33")!
        #expect(prefix.synthesize(ipv4) == IPAddress(synthesized))
        #expect(prefix.extract(IPAddress(synthesized)!) == ipv4)
        #expect(prefix.description == text)
    }

    @Test("RFC 7050: the prefix from a DNS64's answer for ipv4only.arpa; an answer that is no synthesis gives none")
    func discovery() {
        #expect(NAT64Prefix.discovered(from: IPAddress("64:ff9b::c000:aa")!) == NAT64Prefix("64:ff9b::/96"))
        #expect(NAT64Prefix.discovered(from: IPAddress("64:ff9b::c000:ab")!) == NAT64Prefix("64:ff9b::/96"))
        #expect(NAT64Prefix.discovered(from: IPAddress("2001:db8:122:344:c0:0:aa00:0")!) == NAT64Prefix("2001:db8:122:344::/64"))
        #expect(NAT64Prefix.discovered(from: IPAddress("2001:db8:c000:aa::")!) == NAT64Prefix("2001:db8::/32"))
        #expect(NAT64Prefix.discovered(from: IPAddress("2001:db8::1")!) == nil)
        #expect(NAT64Prefix.discovered(from: IPAddress("64:ff9b::c000:201")!) == nil, "192.0.2.1 is no well-known address")
        #expect(NAT64Prefix.discovered(from: IPAddress("192.0.0.170")!) == nil)
    }

    @Test("only RFC 6052's lengths, and no bits past the length, are prefixes")
    func refusals() {
        #expect(NAT64Prefix("64:ff9b::/33") == nil)
        #expect(NAT64Prefix("64:ff9b::1/96") == nil)
        #expect(NAT64Prefix("64:ff9b::/128") == nil)
        #expect(NAT64Prefix("192.0.2.0/24") == nil)
        #expect(NAT64Prefix("64:ff9b::") == nil)
        #expect(NAT64Prefix("2001:db8:100::/40") != nil)
    }

    static func pref64(_ field: UInt16, _ prefix: String, bodySize: Int = 14) -> RouterAdvertisementOption {
        let bytes = IPAddress(prefix)!.bytes
        let body = Array(([UInt8(field >> 8), UInt8(field & 0xff)] + bytes.prefix(12)).prefix(bodySize))
        return RouterAdvertisementOption(interfaceIndex: 2, router: IPAddress("fe80::1"), type: 38, body: body)
    }

    @Test("RFC 8781's PREF64 option: each prefix length code, the lifetime in units of 8 s; a bad code or size is ignored")
    func pref64Option() throws {
        let wellKnown = try #require(Self.pref64(600 | 0, "64:ff9b::").pref64)
        #expect(wellKnown.prefix == NAT64Prefix("64:ff9b::/96") && wellKnown.lifetime == .seconds(600))
        for (code, length) in zip(0..., [96, 64, 56, 48, 40, 32]) {
            #expect(Self.pref64(UInt16(8 | code), "2001:db8:122:344::").pref64?.prefix.length == length)
        }
        // Bits past the length are not the prefix's.
        #expect(Self.pref64(8 | 5, "2001:db8:ffff::").pref64?.prefix == NAT64Prefix("2001:db8::/32"))
        #expect(Self.pref64(600 | 6, "64:ff9b::").pref64 == nil)
        #expect(Self.pref64(600 | 7, "64:ff9b::").pref64 == nil)
        #expect(Self.pref64(0, "64:ff9b::").pref64?.lifetime == .zero, "a lifetime of 0 withdraws the prefix")
        #expect(Self.pref64(600, "64:ff9b::", bodySize: 6).pref64 == nil)
        #expect(RouterAdvertisementOption(interfaceIndex: 2, router: nil, type: 37, body: Self.pref64(600, "64:ff9b::").body).pref64 == nil)
    }

    @Test("an RTM_NEWNDUSEROPT message carrying PREF64, as the kernel sends it (the fuzzer's seed), decodes to the prefix")
    func pref64Message() throws {
        let seed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FuzzTesting/Corpus/netlink/nduseropt-pref64")
        let messages = RtnetlinkDatagram.decode(Array(try Data(contentsOf: seed))).messages
        guard case let .routerOption(option)? = messages.first else { Issue.record("not a router option: \(messages)"); return }
        #expect(option.interfaceIndex == 2 && option.router == IPAddress("fe80::1"))
        #expect(option.pref64?.prefix == NAT64Prefix("64:ff9b::/96") && option.pref64?.lifetime == .seconds(600))
    }

    @Test("the document: ipv4-via for each kind of IPv4, clat and nat64 written and read back")
    func document() throws {
        var path = PathDocumentTests.sample
        #expect(path.ipv4Via == .native)
        #expect(path.jsonString().hasSuffix(#","ipv4-via":"native","clat":null,"nat64":null,"better-way-out":null}"#))
        path.clat = .init(name: "clat", index: 5, kind: .tunnel)
        path.nat64 = .init(prefix: "64:ff9b::/96", source: .routerAdvertisement, interface: "eth0", lifetime: 600)
        path.routes[0].nat64 = "64:ff9b::c629:4"
        #expect(path.ipv4Via == .clat)
        #expect(
            path.jsonString().contains(
                #""ipv4-via":"clat","clat":{"name":"clat","index":5,"kind":"tunnel"},"nat64":{"prefix":"64:ff9b::/96","source":"router-advertisement","interface":"eth0","lifetime":600}"#
            ))
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(path)) as! NSDictionary
        #expect(try JSONSerialization.jsonObject(with: Data(path.jsonString().utf8)) as! NSDictionary == encoded)
        #expect(try Path(json: path.jsonString()) == path)
        path.clat = nil
        path.ipv4 = false
        path.ipv6 = true
        #expect(path.ipv4Via == .nat64)
        path.nat64 = nil
        #expect(path.ipv4Via == .none)
    }

    @Test("every way out: availableInterfaces by verdict, then preference; better-way-out only when the path's known verdict is beaten")
    func waysOut() throws {
        var path = PathDocumentTests.sample
        path.interfaces.append(
            .init(name: "wlan0", index: 3, kind: .wifi, operstate: "up", up: true, carrier: true, addresses: ["10.0.0.2/24"]))
        path.interfaces.append(
            .init(name: "usb0", index: 4, kind: .cellular, operstate: "up", up: true, carrier: true, addresses: ["10.1.0.2/24"]))
        #expect(path.availableInterfaces.map(\.name) == ["eth0", "wlan0", "usb0"] && path.betterWayOut == nil)
        path.connectivity = .portal
        path.interfaces[1].connectivity = .limited
        path.interfaces[2].connectivity = .full
        #expect(path.availableInterfaces.map(\.name) == ["usb0", "eth0", "wlan0"])
        #expect(path.betterWayOut == "usb0" && path.connectivity(of: path.interfaces[0]) == .portal)
        #expect(
            path.jsonString().contains(#""better-way-out":"usb0""#)
                && path.jsonString().contains(#""addresses":["10.1.0.2/24"],"connectivity":"full"}"#))
        #expect(try Path(json: path.jsonString()) == path)
        path.connectivity = .unknown
        #expect(path.betterWayOut == nil, "not while the path's own verdict is unknown")
        path.connectivity = .full
        #expect(path.betterWayOut == nil)
    }

    @Test("better-way-out is the first of availableInterfaces beating the path's verdict, whatever the verdicts, kinds and ties")
    func betterWayOutIsFirstAvailable() {
        var path = PathDocumentTests.sample
        let kinds: [InterfaceKind] = [.wifi, .cellular, .ethernet, .tunnel]
        path.interfaces += kinds.enumerated().map { offset, kind in
            .init(name: "if\(offset)", index: 10 + offset, kind: kind, operstate: "up", up: true, carrier: true, addresses: [])
        }
        let verdicts: [Connectivity?] = [nil, Connectivity.none, .limited, .portal, .full]
        // docs/connectivity.md's order of verdicts, not judged as unknown.
        func rank(_ verdict: Connectivity?) -> Int {
            [Connectivity.unknown, .none, .limited, .portal, .full].firstIndex(of: verdict ?? .unknown)!
        }
        var compared = 0
        for (vpn, own) in [nil, Path.Interface(name: "if3", index: 13, kind: .tunnel)].flatMap({ vpn in
            [Connectivity.none, .limited, .portal].map { (vpn, $0) }
        }) {
            (path.vpn, path.connectivity) = (vpn, own)
            for combination in 0..<(verdicts.count * verdicts.count * verdicts.count * verdicts.count) {
                var rest = combination
                for position in path.interfaces.indices.suffix(kinds.count) {
                    path.interfaces[position].connectivity = verdicts[rest % verdicts.count]
                    rest /= verdicts.count
                }
                let first = path.availableInterfaces.first { entry in
                    entry.index != path.interface?.index && entry.index != path.vpn?.index
                        && rank(entry.connectivity) > rank(own)
                }
                #expect(path.betterWayOut == first?.name, "\(path.interfaces.map { ($0.name, $0.connectivity) })")
                compared += 1
            }
        }
        #expect(compared == 2 * 3 * 625)
    }

    @Test("[monitor] nat64-prefix: taken, or refused with the line and what a prefix must be")
    func configuration() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nat64-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("reachd.toml")
        try "[monitor]\nnat64-prefix = \"64:ff9b:1::/48\"\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try MonitorOptions.load(contentsOf: file.path).nat64Prefix == "64:ff9b:1::/48")
        try "[monitor]\n\nnat64-prefix = \"64:ff9b::1/96\"\n".write(to: file, atomically: true, encoding: .utf8)
        #expect { try MonitorOptions.load(contentsOf: file.path) } throws: { error in
            "\(error)".hasPrefix("\(file.path):3: nat64-prefix must be an IPv6 prefix of length 32, 40, 48, 56, 64 or 96")
        }
        #expect(throws: MonitorOptionsError.self) { try MonitorOptions(nat64Prefix: "64:ff9b::/100") }
    }
}

/// IPv6-only networks as clatd, tayga and networkd leave the kernel (docs/path.md, "IPv6-only networks").
@Suite("IPv6-only paths: CLAT and NAT64 (real kernel, network namespaces)", .needsNamespaces, .ownThreads)
struct IPv6OnlyPathTests {
    @Test("a CLAT is no VPN: the path is the IPv6 uplink's, IPv4 through the CLAT", .needsTun)
    func clat() async throws {
        try await withNamespaces("clat", "router") { ns in
            try ns[0].addIPv6OnlyUplink(router: ns[1])
            try ns[0].addCLAT()
            let path = try path(ns[0])
            #expect(path.status == .wired)
            #expect(path.interface?.name == "eth0" && path.gateway == "2001:db8:1::1")
            #expect(path.vpn == nil, "\(path.jsonString())")
            #expect(path.clat?.name == "clat" && path.clat?.kind == .tunnel)
            #expect(path.ipv4 && path.ipv6 && path.ipv4Via == .clat)
            #expect(path.routes.first?.interface == "clat")
        }
    }

    @Test("a CLAT in BPF on the uplink (no device of its own): IPv4 from an RFC 7335 address through the uplink")
    func clatOnUplink() async throws {
        try await withNamespaces("bpfclat", "router") { ns in
            try ns[0].addIPv6OnlyUplink(router: ns[1])
            try ns[0].ipBatch(["addr add 192.0.0.5/32 dev eth0", "route add default dev eth0 src 192.0.0.5"])
            let path = try path(ns[0])
            #expect(path.status == .wired && path.interface?.name == "eth0" && path.vpn == nil, "\(path.jsonString())")
            #expect(path.clat?.name == "eth0" && path.ipv4Via == .clat)
        }
    }

    @Test("a VPN over a CLAT host stays a VPN, riding on the CLAT's uplink", .needsTun)
    func vpnOverCLAT() async throws {
        try await withNamespaces("vpnclat", "router") { ns in
            try ns[0].addIPv6OnlyUplink(router: ns[1])
            try ns[0].addCLAT()
            try ns[0].openTun("tun0")
            try ns[0].ipBatch([
                "addr add 10.8.0.2/24 dev tun0", "link set dev tun0 up",
                "route add 0.0.0.0/1 dev tun0", "route add 128.0.0.0/1 dev tun0"
            ])
            let path = try path(ns[0])
            #expect(path.status == .wired)
            #expect(path.vpn?.name == "tun0", "\(path.jsonString())")
            #expect(path.interface?.name == "eth0")
            #expect(path.clat?.name == "clat")
        }
    }

    @Test("a CLAT whose process is gone (no carrier) gives no IPv4: the IPv6 path stands", .needsTun)
    func clatWithoutCarrier() async throws {
        try await withNamespaces("clatdown", "router") { ns in
            try ns[0].addIPv6OnlyUplink(router: ns[1])
            try ns[0].addCLAT(held: false)
            let path = try path(ns[0])
            #expect(path.status == .wired && path.interface?.name == "eth0")
            #expect(!path.ipv4 && path.ipv6 && path.clat == nil && path.vpn == nil)
            #expect(path.routes.first?.reason == .noCarrier)
            #expect(path.ipv4Via == .none)
        }
    }

    @Test("NAT64 without a CLAT, the prefix from the config: IPv4 by name only; an IPv4 literal through the synthesised address")
    func nat64WithoutCLAT() async throws {
        try await withNamespaces("nat64", "router") { ns in
            try ns[0].addIPv6OnlyUplink(router: ns[1])
            let options = try MonitorOptions(networkNamespace: ns[0].path, nat64Prefix: "64:ff9b::/96")
            let path = try ReachabilityMonitor.path(options: options)
            #expect(path.status == .wired && !path.ipv4 && path.ipv6)
            #expect(path.nat64 == .init(prefix: "64:ff9b::/96", source: .config))
            #expect(path.ipv4Via == .nat64)
            let literal = try ReachabilityMonitor.path(to: .host("192.0.2.1"), options: options)
            #expect(literal.status == .wired && literal.interface?.name == "eth0", "\(literal.jsonString())")
            #expect(literal.routes.first?.nat64 == "64:ff9b::c000:201")
            #expect(!literal.ipv4 && literal.ipv4Via == .nat64)
            // Without a known prefix, the literal has no route.
            #expect(
                try ReachabilityMonitor.path(to: .host("192.0.2.1"), options: try MonitorOptions(networkNamespace: ns[0].path)).status
                    == .unreachable)
        }
    }

    @Test(
        "PREF64 from router advertisements: learnt, replaced, withdrawn by a lifetime of 0 and with its router; a bad prefix length ignored",
        .timeLimit(.minutes(2)))
    func pref64FromRouterAdvertisements() async throws {
        try await withScratch { directory in
            try await withNamespaces("pref64", "router") { ns in
                try ns[0].addIPv6OnlyUplink(router: ns[1], defaultRoute: false)
                try ns[0].sysctl("net.ipv6.conf.eth0.accept_ra=2")
                let monitor = ReachabilityMonitor(options: try options(ns[0]))
                try monitor.start()
                defer { monitor.stop() }
                let advertiser = try await CaptivePortalNetwork.Advertiser(
                    in: ns[1], interface: "up0", directory: directory, lifetime: 1800, uri: "",
                    options: CaptivePortalNetwork.pref64("64:ff9b::", code: 0, lifetime: 600), interval: 0.2)
                defer { advertiser.stop() }
                var path = try await waitForPath(monitor, "the announced prefix") { $0.nat64 != nil }
                #expect(path.nat64 == .init(prefix: "64:ff9b::/96", source: .routerAdvertisement, interface: "eth0", lifetime: 600))
                #expect(path.ipv4Via == .nat64 && path.status == .wired)

                // An option with an undefined prefix length code changes nothing.
                try advertiser.set(lifetime: 1800, uri: "", options: CaptivePortalNetwork.pref64("2001:db8:64::", code: 6, lifetime: 600))
                try await Task.sleep(for: .seconds(1))
                #expect(monitor.currentPath?.nat64?.prefix == "64:ff9b::/96")

                try advertiser.set(lifetime: 1800, uri: "", options: CaptivePortalNetwork.pref64("2001:db8:64::", code: 1, lifetime: 1200))
                path = try await waitForPath(monitor, "the replaced prefix") { $0.nat64?.prefix == "2001:db8:64::/64" }
                #expect(path.nat64?.lifetime == 1200)

                try advertiser.set(lifetime: 1800, uri: "", options: CaptivePortalNetwork.pref64("2001:db8:64::", code: 1, lifetime: 0))
                path = try await waitForPath(monitor, "the prefix withdrawn") { $0.nat64 == nil }
                #expect(path.ipv4Via == .none && path.status == .wired)

                // A router that stops being one (router lifetime 0) takes its prefix with it, while
                // another route (static, behind the router's) carries the path on.
                try ns[0].ip("route add default via 2001:db8:1::1 dev eth0 metric 2048")
                try advertiser.set(lifetime: 1800, uri: "", options: CaptivePortalNetwork.pref64("64:ff9b::", code: 0, lifetime: 600))
                try await waitForPath(monitor, "the prefix announced again") { $0.nat64?.prefix == "64:ff9b::/96" }
                try advertiser.set(lifetime: 0, uri: "", options: CaptivePortalNetwork.pref64("64:ff9b::", code: 0, lifetime: 600))
                path = try await waitForPath(monitor, "the prefix gone with its router") { $0.gateway == "2001:db8:1::1" }
                #expect(path.nat64 == nil && path.status == .wired, "\(path.jsonString())")
            }
        }
    }
}
