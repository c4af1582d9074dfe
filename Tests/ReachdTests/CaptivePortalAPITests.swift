import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// When the network says it is a captive portal (docs/connectivity.md): a router namespace
/// sends router advertisements with RFC 8910's option from a raw ICMPv6 socket, an HTTPS
/// server there answers RFC 8908's API, and reachd in the host namespace (accept_ra=2)
/// discovers, queries, combines it with its probe, and judges trust knowing it.
@Suite("reachd and the network's captive-portal API", .serialized, .needsNamespaces, .ownThreads)
struct CaptivePortalAPITests {
    static func path(_ daemon: DaemonProcess) -> Path? { ConnectivityTests.path(daemon) }

    /// The `captive-portal` evidence of the spooled reports that carry `evidence`.
    static func reports(_ scratch: URL, evidence: String) -> [[String: Any]] {
        ConnectivityTests.spooled(scratch).compactMap { $0["captive-portal"] as? [String: Any] }.filter {
            $0["evidence"] as? String == evidence
        }
    }

    static let captive =
        #"{"captive": true, "user-portal-url": "https://10.1.0.1:4443/login", "venue-info-url": "https://10.1.0.1:4443/venue"}"#

    static func config(in scratch: URL, extra: String = "") -> String {
        """
        \(ConnectivityTests.connectivity(uri: "http://10.1.0.1/generate_204", interval: "10s"))\
        capport-anchors = ["capport-ca.pem"]
        networkd-links = "\(scratch.appendingPathComponent("links").path)"
        \(extra)
        [metrics]
        listen = "127.0.0.1:9748"
        """
    }

    @Test(
        "from a router advertisement: captive is a portal at the API's page whatever the probe says, not captive never makes a failing probe full, a session's end is published before it comes and its end is seen; an announced portal and a contradicted redirect in the trust verdict; a malformed answer and a plain-HTTP URI refused; the URI lives as long as the router",
        .timeLimit(.minutes(4)), .needsRoot("the IPv6 route collection interval, which only the first user namespace has"))
    func routerAdvertisement() async throws {
        try await withScratch { scratch in
            try FileManager.default.createDirectory(at: scratch.appendingPathComponent("links"), withIntermediateDirectories: true)
            try CaptivePortalNetwork.makePKI(for: "10.1.0.1", in: scratch)
            try PinnedServer.makePKI(in: scratch)
            try ConnectivityTests.makePortalCertificate(in: scratch)
            let config = try PinnedServer.config(pins: try PinnedServer.pins(in: scratch), in: scratch)
            try (String(contentsOf: config, encoding: .utf8) + Self.config(in: scratch)).write(
                to: config, atomically: true, encoding: .utf8)
            try await withNamespaces("rdcapra", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                try ns[0].sysctl("net.ipv6.conf.eth0.accept_ra=2")
                // The kernel removes a router whose lifetime ended at its next collection: every second here.
                try ns[0].sysctl("net.ipv6.route.gc_interval=1")
                let probe = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "204")
                defer { probe.stop() }
                let api = try await CaptivePortalNetwork.APIServer(in: ns[1], address: "10.1.0.1", directory: scratch, answer: Self.captive)
                defer { api.stop() }
                let tls = try await PinnedServer.serve(in: ns[1], from: scratch, certificate: "portal")
                defer { kill(tls.processIdentifier, SIGKILL); tls.waitUntilExit() }
                let router = try await CaptivePortalNetwork.Advertiser(
                    in: ns[1], interface: "up0", directory: scratch, lifetime: 60,
                    uri: "https://10.1.0.1:4443/capport")
                defer { router.stop() }
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()

                // Announced and captive: a portal at the API's page, though the probe answers 204.
                #expect(await eventually(.seconds(20)) { Self.path(daemon)?.capport?.captive == true }, "\(daemon.log)")
                let announced = try #require(Self.path(daemon))
                #expect(announced.connectivity == .portal && announced.portal == "https://10.1.0.1:4443/login", "\(announced)")
                let capport = try #require(announced.capport)
                #expect(
                    capport.api == "https://10.1.0.1:4443/capport" && capport.source == .routerAdvertisement && capport.interface == "eth0")
                #expect(capport.venueInfoURL == "https://10.1.0.1:4443/venue" && capport.error == nil)
                #expect(api.requests.allSatisfy { $0 == "/capport application/captive+json" } && !api.requests.isEmpty, "\(api.requests)")
                let metrics = ns[0].scrapeMetrics()
                #expect(metricValue("reachd_captive_portal_captive{source=\"router-advertisement\"}", in: metrics) == 1, "\(metrics)")
                #expect(metricValue("reachd_connectivity{state=\"portal\"}", in: metrics) == 1)
                let status = try daemon.busctl([
                    "get-property", "io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1",
                    "CaptivePortalStatus", "CaptivePortalSource", "PortalURL"
                ]).output
                #expect(status == "s \"captive\"\ns \"router-advertisement\"\ns \"https://10.1.0.1:4443/login\"\n", "\(status)")
                let human = try ns[0].exec([DaemonProcess.reachctl, "status", "--bus", daemon.socket]).output
                #expect(
                    human.contains("capport:      captive")
                        && human.contains("capport-api:  https://10.1.0.1:4443/capport (router-advertisement, eth0)"), "\(human)")
                // The pinned host's interception behind an announced portal: portal, reported as announced.
                #expect(await eventually(.seconds(20)) { Self.path(daemon)?.trust == .portal }, "\(daemon.log)")
                // (A round may have run before the first advertisement reached reachd: the network had said nothing yet.)
                #expect(await eventually { Self.reports(scratch, evidence: "announced").count == 1 }, "\(daemon.log)")
                let evidence = Self.reports(scratch, evidence: "announced").first
                #expect(
                    evidence?["evidence"] as? String == "announced" && evidence?["api"] as? String == "https://10.1.0.1:4443/capport",
                    "\(evidence ?? [:])")
                #expect(
                    daemon.log.contains("pin failure for pinned.test behind a captive portal announced by https://10.1.0.1:4443/capport"),
                    "\(daemon.log)")

                // Logged in: not captive, the session counted down. Its end is in the document before it comes,
                // and once it has come the API is asked again with no path change.
                try api.set(#"{"captive": false, "seconds-remaining": 4, "bytes-remaining": 1000000, "can-extend-session": true}"#)
                let client = ReachabilityClient(endpoint: .address(daemon.address))
                #expect(try await client.checkConnectivity() == .full)
                let session = try #require(Self.path(daemon)?.capport)
                #expect(session.captive == false && session.bytesRemaining == 1_000_000 && session.canExtendSession == true)
                let expires = try #require(session.expires)
                #expect(expires > Date() && expires < Date() + 6, "\(expires)")
                #expect(daemon.log.contains("says not captive, the session ends in"), "\(daemon.log)")
                #expect(metricValue("reachd_captive_portal_session_remaining_seconds", in: ns[0].scrapeMetrics()) ?? 99 <= 4)
                try api.set(Self.captive)
                #expect(await eventually(.seconds(10)) { Self.path(daemon)?.capport?.captive == true }, "\(daemon.log)")
                #expect(Date() >= expires, "asked again once the session ended, not before")
                #expect(Self.path(daemon)?.connectivity == .portal)

                // Not captive, but the probe is redirected: the probe decides (never full), and the redirect is
                // not the network's portal — the same interception is now an attack, reported with the contradiction.
                try api.set(#"{"captive": false}"#)
                try probe.set("redirect")
                try await Task.sleep(for: .seconds(2)) // the trust rounds' spacing
                #expect(try await client.checkConnectivity() == .portal)
                #expect(Self.path(daemon)?.capport?.captive == false && Self.path(daemon)?.portal == "http://10.1.0.1/login?from=probe")
                try ns[0].ip("link set dev eth0 down")
                try ns[0].ip("link set dev eth0 up")
                try ns[0].ip("route replace default via 10.1.0.1 dev eth0")
                // The helper spools the report before the round ends, and the verdict was compromised before the
                // flap: the log line is what says this round's outcome is in.
                #expect(
                    await eventually(.seconds(30)) {
                        Self.path(daemon)?.trust == .compromised && Self.reports(scratch, evidence: "contradicted").count == 1
                            && daemon.log.contains("yet https://10.1.0.1:4443/capport says the network is not captive")
                    }, "\(daemon.log)")
                #expect(await eventually { Self.path(daemon)?.connectivity == .portal && Self.path(daemon)?.capport?.captive == false })
                let contradicted = Self.reports(scratch, evidence: "contradicted").first
                #expect(contradicted?["location"] as? String == "http://10.1.0.1/login?from=probe", "\(ConnectivityTests.spooled(scratch))")

                // A malformed answer: refused with its reason, logged, counted; the daemon carries on.
                try api.set(#"{"captive": "yes"}"#)
                _ = try await client.checkConnectivity()
                #expect(
                    await eventually { Self.path(daemon)?.capport?.error?.contains("captive has the wrong type") == true }, "\(daemon.log)")
                #expect(Self.path(daemon)?.capport?.captive == nil)
                #expect(daemon.log.contains("answered a document that is not RFC 8908's: captive has the wrong type"), "\(daemon.log)")
                #expect(metricValue("reachd_captive_portal_api_queries_total{result=\"invalid\"}", in: ns[0].scrapeMetrics()) ?? 0 >= 1)
                try api.set("html:<html>Log in</html>")
                _ = try await client.checkConnectivity()
                #expect(
                    await eventually {
                        Self.path(daemon)?.capport?.error?.contains("answered text/html, not application/captive+json") == true
                    })

                // A plain-HTTP URI: published with the refusal, never asked.
                try router.set(lifetime: 60, uri: "http://10.1.0.1/capport")
                #expect(await eventually { Self.path(daemon)?.capport?.api == "http://10.1.0.1/capport" }, "\(daemon.log)")
                #expect(Self.path(daemon)?.capport?.error?.contains("refused (RFC 8908's API is HTTPS only)") == true)
                // A query of the earlier API may still be under way: its helper, a debug binary on a loaded
                // machine, once reached the server more than 0.5 s after the URI changed. Wait until the server
                // has heard nothing for a second, then nothing may come.
                var asked = api.requests.count
                for _ in 0..<20 {
                    try await Task.sleep(for: .seconds(1))
                    guard api.requests.count != asked else { break }
                    asked = api.requests.count
                }
                try await Task.sleep(for: .seconds(2))
                #expect(
                    api.requests.count == asked && !probe.paths.contains("/capport"),
                    "asked after the change: \(api.requests.dropFirst(asked)); \(daemon.log.suffix(1500))")

                // The URI lives as long as the router: lifetime 0 withdraws it at once; a lifetime that runs out, when it does.
                try router.set(lifetime: 0, uri: "https://10.1.0.1:4443/capport")
                #expect(await eventually { Self.path(daemon)?.capport == nil }, "\(daemon.log)")
                try api.set(Self.captive)
                try router.set(lifetime: 4, uri: "https://10.1.0.1:4443/capport")
                #expect(await eventually { Self.path(daemon)?.capport?.captive == true }, "\(daemon.log)")
                router.stop()
                let stopped = ContinuousClock.now
                #expect(await eventually(.seconds(15)) { Self.path(daemon)?.capport == nil }, "\(daemon.log)")
                #expect(ContinuousClock.now - stopped >= .seconds(2), "not before the router's lifetime ran out")
                #expect(Self.path(daemon)?.connectivity == .portal, "the probe's redirect again")
            }
        }
    }

    @Test(
        "from networkd's link state, written as networkd writes it, over the config's URI; followed as it changes; the API's certificate checked against the system's roots and the configured anchors; off queries nothing",
        .timeLimit(.minutes(3)), .needsRoot("reachctl reload, which is root's"))
    func networkdAndConfig() async throws {
        try await withScratch { scratch in
            let links = scratch.appendingPathComponent("links")
            try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
            try CaptivePortalNetwork.makePKI(for: "10.1.0.1", in: scratch)
            let config = scratch.appendingPathComponent("reachd.toml")
            func write(_ extra: String, anchors: Bool = true) throws {
                var text = Self.config(in: scratch, extra: extra)
                if !anchors { text = text.replacingOccurrences(of: "capport-anchors = [\"capport-ca.pem\"]\n", with: "") }
                try text.write(to: config, atomically: true, encoding: .utf8)
            }
            try write("capport = \"https://10.1.0.1:4443/config\"")
            try await withNamespaces("rdcapnd", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let probe = try await HTTPProbeServer(in: ns[1], address: "10.1.0.1", directory: scratch, mode: "204")
                defer { probe.stop() }
                let api = try await CaptivePortalNetwork.APIServer(in: ns[1], address: "10.1.0.1", directory: scratch, answer: Self.captive)
                defer { api.stop() }
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()

                #expect(await eventually(.seconds(20)) { Self.path(daemon)?.capport?.captive == true }, "\(daemon.log)")
                #expect(Self.path(daemon)?.capport?.source == .config && Self.path(daemon)?.connectivity == .portal)

                // networkd records a URI for the link (DHCP option 114, …): it comes before the config's.
                let index = try ns[0].exec(["cat", "/sys/class/net/eth0/ifindex"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
                let state = links.appendingPathComponent(index)
                func networkd(_ captivePortal: String?) throws {
                    // As networkd writes it: a temporary file renamed over the old one.
                    let text =
                        "# This is private data. Do not parse.\nADMIN_STATE=configured\nOPER_STATE=routable\n"
                        + (captivePortal.map { "CAPTIVE_PORTAL=\($0)\n" } ?? "") + "DNS=10.1.0.1\n"
                    let temporary = links.appendingPathComponent(".#\(index)tmp")
                    try text.write(to: temporary, atomically: false, encoding: .utf8)
                    #expect(rename(temporary.path, state.path) == 0)
                }
                try networkd("https://10.1.0.1:4443/networkd")
                #expect(await eventually { Self.path(daemon)?.capport?.source == .networkd }, "\(daemon.log)")
                #expect(Self.path(daemon)?.capport?.api == "https://10.1.0.1:4443/networkd")
                #expect(await eventually { api.requests.contains("/networkd application/captive+json") })
                try networkd(nil)
                #expect(await eventually { Self.path(daemon)?.capport?.source == .config }, "\(daemon.log)")

                // Without the anchor, the API's certificate (from no public root) is refused: no verdict from it.
                try write("capport = \"https://10.1.0.1:4443/config\"", anchors: false)
                _ = try ns[0].exec([DaemonProcess.reachctl, "reload", "--bus", daemon.socket])
                #expect(await eventually { Self.path(daemon)?.capport?.error?.contains("is not trusted") == true }, "\(daemon.log)")
                #expect(Self.path(daemon)?.capport?.captive == nil && Self.path(daemon)?.connectivity == .full, "the probe decides")

                // off: nothing is asked, whatever networkd says.
                try write("capport = \"off\"")
                try networkd("https://10.1.0.1:4443/networkd")
                _ = try ns[0].exec([DaemonProcess.reachctl, "reload", "--bus", daemon.socket])
                #expect(await eventually { Self.path(daemon)?.capport == nil }, "\(daemon.log)")
                let asked = api.requests.count
                try await Task.sleep(for: .seconds(2))
                #expect(api.requests.count == asked)
            }
        }
    }
}
