import FoundationEssentials
import IPAddresses
import SystemCalls
import TOML
import Testing

@testable import Netlink
@testable import ReachabilityCore

/// RFC 8908's document (the vectors of ChromeOS shill's capport tests and Android's
/// NetworkMonitor test of the API, public facts),
/// RFC 8910's router-advertisement option as the kernel passes it on, and the config.
@Suite("captive-portal API documents and discovery")
struct CaptivePortalAPIDocumentTests {
    static func parse(_ json: String) throws(CaptivePortalAPIDocument.Invalid) -> CaptivePortalAPIDocument {
        try CaptivePortalAPIDocument.parse(Array(json.utf8))
    }

    @Test("every field; optional fields absent; unknown keys ignored")
    func valid() throws {
        let full = try Self.parse(
            """
            {"captive": false, "user-portal-url": "https://example.org/portal.html",
             "venue-info-url": "https://flight.example.com/entertainment", "seconds-remaining": 326,
             "bytes-remaining": 65536, "can-extend-session": true, "x-vendor": [1, 2]}
            """)
        #expect(
            full
                == CaptivePortalAPIDocument(
                    captive: false, userPortalURL: "https://example.org/portal.html",
                    venueInfoURL: "https://flight.example.com/entertainment", secondsRemaining: 326,
                    bytesRemaining: 65536, canExtendSession: true))
        let minimal = try Self.parse(#"{"captive": true, "user-portal-url": "https://example.org/portal.html"}"#)
        #expect(minimal == CaptivePortalAPIDocument(captive: true, userPortalURL: "https://example.org/portal.html"))
        #expect(try Self.parse(#"{"captive": false}"#) == CaptivePortalAPIDocument(captive: false))
        // Android's NetworkMonitor test of the API: captive, with the portal and the venue.
        let android = try Self.parse(
            """
            {"captive": true, "user-portal-url": "https://login.capport.android.com", "venue-info-url": "https://venueinfo.capport.android.com"}
            """)
        #expect(
            android.captive && android.userPortalURL == "https://login.capport.android.com"
                && android.venueInfoURL == "https://venueinfo.capport.android.com")
    }

    @Test("refused: no captive, captive not a boolean, captive without a user-portal-url, an http or malformed URL, not JSON, too large")
    func invalid() {
        for (json, reason) in [
            (#"{"user-portal-url": "https://example.org/portal.html", "seconds-remaining": 326}"#, "captive is missing"),
            (#"{"captive": "true", "user-portal-url": "https://example.org/portal.html"}"#, "captive has the wrong type"),
            (#"{"captive": null}"#, "captive has the wrong type"),
            (#"{"captive": true}"#, "captive is true without a user-portal-url"),
            (#"{"captive": true, "user-portal-url": "http://example.org/portal.html"}"#, "user-portal-url is not an https:// URL"),
            (
                #"{"captive": true, "user-portal-url": "https://example.org/p", "venue-info-url": "invalid URL"}"#,
                "venue-info-url is not an https:// URL"
            ),
            (#"{"captive": false, "user-portal-url": "https://user@example.org/"}"#, "user-portal-url is not an https:// URL"),
            ("Invalid JSON string", "not a JSON object"),
            (#"[true]"#, "not a JSON object"),
            (#"{"captive": false, "seconds-remaining": "326"}"#, "seconds-remaining has the wrong type")
        ] {
            #expect(throws: CaptivePortalAPIDocument.Invalid.self) { try Self.parse(json) }
            do {
                _ = try Self.parse(json)
            } catch {
                #expect(error.description.hasPrefix(reason), "\(json): \(error)")
            }
        }
        let large = #"{"captive": false, "pad": ""# + String(repeating: "x", count: 70_000) + #""}"#
        #expect(throws: CaptivePortalAPIDocument.Invalid("the document is larger than 65536 bytes")) { try Self.parse(large) }
    }

    @Test("UTF-8 only, a byte-order mark let through; 513 brackets, on which JSONDecoder traps, are refused")
    func encodingAndDepth() throws {
        let document = Array(#"{"captive": false}"#.utf8)
        #expect(try CaptivePortalAPIDocument.parse([0xEF, 0xBB, 0xBF] + document) == CaptivePortalAPIDocument(captive: false))
        #expect(throws: CaptivePortalAPIDocument.Invalid("not UTF-8")) {
            try CaptivePortalAPIDocument.parse(Array(#"{"captive": false, "x": ""#.utf8) + [0xFF] + Array(#""}"#.utf8))
        }
        #expect(throws: CaptivePortalAPIDocument.Invalid("not a JSON object")) {
            try CaptivePortalAPIDocument.parse(Array(repeating: UInt8(ascii: "["), count: 513))
        }
    }

    @Test("negative or absurd remaining values are dropped; while captive there is no session to count")
    func remaining() throws {
        #expect(
            try Self.parse(#"{"captive": false, "seconds-remaining": -326, "bytes-remaining": -65536}"#)
                == CaptivePortalAPIDocument(captive: false))
        #expect(try Self.parse(#"{"captive": false, "seconds-remaining": 1e300}"#).secondsRemaining == nil)
        #expect(try Self.parse(#"{"captive": false, "seconds-remaining": 12.7}"#).secondsRemaining == 12)
        let captive = try Self.parse(
            #"{"captive": true, "user-portal-url": "https://example.org/p", "seconds-remaining": 326, "bytes-remaining": 65536}"#)
        #expect(captive.secondsRemaining == nil && captive.bytesRemaining == nil)
    }

    @Test("RTM_NEWNDUSEROPT: the captive-portal option, its router and interface; other options and malformed ones")
    func routerOption() throws {
        let router = IPAddress("fe80::1")!
        func message(option: [UInt8], icmpType: UInt8 = 134, family: UInt8 = 10, source: IPAddress? = router) -> [UInt8] {
            var payload: [UInt8] =
                [family, 0] + withUnsafeBytes(of: UInt16(option.count).littleEndian, Array.init)
                + withUnsafeBytes(of: Int32(7).littleEndian, Array.init) + [icmpType, 0, 0, 0, 0, 0, 0, 0] + option
            if let source { payload += withUnsafeBytes(of: UInt16(20).littleEndian, Array.init) + [1, 0] + source.bytes }
            let length = 16 + payload.count
            return withUnsafeBytes(of: UInt32(length).littleEndian, Array.init) + withUnsafeBytes(of: UInt16(68).littleEndian, Array.init)
                + [0, 0] + [UInt8](repeating: 0, count: 8) + payload
        }
        let uri = Array("https://capport.example/api".utf8)
        let units = (2 + uri.count + 7) / 8
        let option: [UInt8] = [37, UInt8(units)] + uri + [UInt8](repeating: 0, count: units * 8 - 2 - uri.count)
        let decoded = RtnetlinkDatagram.decode(message(option: option)).messages
        guard case let .routerOption(parsed)? = decoded.first else { Issue.record("\(decoded)"); return }
        #expect(parsed.interfaceIndex == 7 && parsed.router == router && parsed.captivePortalURI == "https://capport.example/api")
        // RDNSS (25): passed on, but no captive portal.
        let rdnss: [UInt8] = [25, 3, 0, 0, 0, 0, 0, 60] + IPAddress("2001:db8::53")!.bytes
        guard case let .routerOption(other)? = RtnetlinkDatagram.decode(message(option: rdnss)).messages.first else {
            Issue.record(); return
        }
        #expect(other.captivePortalURI == nil)
        // A length that disagrees with the option's own, another family or ICMPv6 type: nothing.
        #expect(RtnetlinkDatagram.decode(message(option: [37, 9] + Array(option.dropFirst(2)))).messages.isEmpty)
        #expect(RtnetlinkDatagram.decode(message(option: option, family: 2)).messages.isEmpty)
        #expect(RtnetlinkDatagram.decode(message(option: option, icmpType: 135)).messages.isEmpty)
        // No source address: parsed, without a router (the engine keeps nothing then).
        guard case let .routerOption(anonymous)? = RtnetlinkDatagram.decode(message(option: option, source: nil)).messages.first else {
            Issue.record(); return
        }
        #expect(anonymous.router == nil)
    }

    @Test(
        "[connectivity] capport: auto, off, an https URL; http refused with the line; anchors relative to the file, a missing one refused with its line"
    )
    func configuration() throws {
        func read(_ text: String) throws -> ConnectivityOptions {
            var root = TOMLTableReader(try TOML.parse(text, file: "/etc/reachd.toml"), file: "/etc/reachd.toml", name: "")
            var table = try #require(try root.table("connectivity"))
            return try ConnectivityOptions(reading: &table)
        }
        #expect(try read("[connectivity]\n").capport == .discover)
        #expect(try read("[connectivity]\ncapport = \"off\"\n").capport == .off)
        let configured = try read(
            "[connectivity]\ncapport = \"https://portal.example/capport\"\ncapport-anchors = [\"passwd\", \"/etc/passwd\"]\nnetworkd-links = \"\"\n"
        )
        #expect(configured.capport == .uri("https://portal.example/capport"))
        #expect(
            configured.capportAnchors == ["/etc/passwd", "/etc/passwd"] && configured.networkdLinks == nil,
            "relative to the file's directory")
        do {
            _ = try read("[connectivity]\ncapport-anchors = [\"missing-ca.pem\"]\n")
            Issue.record("a missing anchors file was accepted")
        } catch {
            #expect("\(error)".contains("reachd.toml:2") && "\(error)".contains("/etc/missing-ca.pem"), "\(error)")
        }
        #expect(try read("[connectivity]\n").networkdLinks == "/run/systemd/netif/links")
        #expect(throws: TOMLError.self) { try read("[connectivity]\ncapport = \"http://portal.example/capport\"\n") }
        do {
            _ = try read("[connectivity]\n\ncapport = \"http://portal.example/capport\"\n")
        } catch {
            #expect("\(error)".contains("reachd.toml:3") && "\(error)".contains("HTTPS only"), "\(error)")
        }
    }
}
