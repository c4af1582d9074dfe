import Foundation
import TOML
import TestTraits
import Testing

@testable import ReachabilityCore

/// How a probe's answer is judged, and the `[connectivity]` table. The probe on the
/// wire, against a real HTTP server, is in ReachdTests' ConnectivityTests.
@Suite("Connectivity probe: answers and options", .ownThreads)
struct ConnectivityProbeTests {
    func probe(_ response: String = "", uri: String = "http://192.0.2.1/generate_204") -> ConnectivityProbe {
        ConnectivityProbe(ConnectivityOptions(uri: .init(uri), response: response))!
    }

    func judge(_ answer: String, response: String = "", atEnd: Bool = true) -> ConnectivityProbe.Answer? {
        probe(response).judge(Array(answer.utf8), atEnd: atEnd)
    }

    @Test("204, or 200 with an empty body, is full when no response is configured")
    func expectedEmpty() {
        #expect(judge("HTTP/1.1 204 No Content\r\n\r\n", atEnd: false)?.connectivity == .full)
        #expect(judge("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", atEnd: false)?.connectivity == .full)
        #expect(judge("HTTP/1.0 200 OK\r\n\r\n")?.connectivity == .full)
        #expect(judge("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", atEnd: false)?.connectivity == .full)
        // Not decided before the body's framing says so.
        #expect(judge("HTTP/1.0 200 OK\r\n\r\n", atEnd: false) == nil)
        #expect(judge("HTTP/1.1 204 No Cont", atEnd: false) == nil)
        // Header names compare as ASCII without case, and only so ("\r" is not "-").
        #expect(judge("HTTP/1.1 200 OK\r\nCONTENT-length: 0\r\n\r\n", atEnd: false)?.connectivity == .full)
        #expect(judge("HTTP/1.1 200 OK\r\nContent\rLength: 0\r\n\r\n", atEnd: false) == nil)
    }

    @Test("a redirect, another status or another body is a portal; a relative Location is made absolute")
    func portals() {
        let redirect = judge("HTTP/1.1 302 Found\r\nlocation: /login?x=1\r\nContent-Length: 0\r\n\r\n", atEnd: false)
        #expect(
            redirect
                == .init(
                    connectivity: .portal, portal: "http://192.0.2.1/login?x=1", detail: "302 to http://192.0.2.1/login?x=1",
                    httpStatus: 302))
        #expect(judge("HTTP/1.1 307 T\r\nLocation:  https://portal.example/ \r\n\r\n")?.portal == "https://portal.example/")
        #expect(judge("HTTP/1.1 302 Found\r\nLocation: //other.example/x\r\n\r\n")?.portal == "//other.example/x")
        // A Location that is not printable ASCII, or too long, is not repeated on the bus.
        #expect(judge("HTTP/1.1 302 Found\r\nLocation: /l\u{7}gin\r\n\r\n")?.portal == nil)
        #expect(judge("HTTP/1.1 302 Found\r\nLocation: /" + String(repeating: "a", count: 3000) + "\r\n\r\n")?.portal == nil)
        #expect(judge("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n<html>log in</html>", atEnd: false)?.connectivity == .portal)
        #expect(judge("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", atEnd: false)?.connectivity == .portal)
        #expect(judge("HTTP/1.1 511 Network Authentication Required\r\n\r\n")?.connectivity == .portal)
        #expect(
            judge("HTTP/1.1 511 Network Authentication Required\r\n\r\n")?.httpStatus == 511,
            "the evidence a report behind a portal carries")
        #expect(judge("SSH-2.0-OpenSSH\r\n\r\n")?.connectivity == .portal)
        #expect(judge("garbage")?.connectivity == .portal)
    }

    @Test("a configured response: a 200 whose body starts with it")
    func configuredResponse() {
        let success = "Microsoft Connect Test"
        #expect(
            judge("HTTP/1.1 200 OK\r\nContent-Length: 22\r\n\r\nMicrosoft Connect Test", response: success, atEnd: false)?.connectivity
                == .full)
        #expect(judge("HTTP/1.1 200 OK\r\n\r\nMicrosoft Connect Test and more", response: success, atEnd: false)?.connectivity == .full)
        #expect(
            judge(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nMicrosoft\r\nd\r\n Connect Test\r\n0\r\n\r\n",
                response: success, atEnd: false)?.connectivity == .full)
        #expect(judge("HTTP/1.1 200 OK\r\n\r\nMicrosoft", response: success, atEnd: false) == nil, "too short to tell yet")
        #expect(judge("HTTP/1.1 200 OK\r\n\r\nMicrosoft", response: success)?.connectivity == .portal)
        #expect(judge("HTTP/1.1 204 No Content\r\n\r\n", response: success)?.connectivity == .portal)
    }

    @Test("the probe URL: http only, a host and a port, the Host header")
    func uri() {
        let plain = ConnectivityOptions.ProbeURI("http://connectivity-check.example.net/generate_204")
        #expect(plain?.host == "connectivity-check.example.net" && plain?.port == 80 && plain?.target == "/generate_204")
        #expect(plain?.hostHeader == "connectivity-check.example.net")
        let v6 = ConnectivityOptions.ProbeURI("HTTP://[2001:db8::1]:8080")
        #expect(v6?.host == "2001:db8::1" && v6?.port == 8080 && v6?.target == "/" && v6?.hostHeader == "[2001:db8::1]:8080")
        for bad in [
            "https://example.net/", "ftp://x/", "http://", "http://user@host/", "http://host:0/", "http://host:99999/",
            "http://[::1/", "http://[192.0.2.1]/", "http://ho st/", "http://host/#fragment", "http://bad_name!/"
        ] {
            #expect(ConnectivityOptions.ProbeURI(bad) == nil, "\(bad)")
        }
    }

    @Test("[connectivity]: defaults, values, errors with file:line")
    func options() throws {
        func read(_ text: String) throws -> ConnectivityOptions {
            var table = try TOMLTableReader(TOML.parse(text, file: "c.toml"), file: "c.toml", name: "[connectivity]")
            return try ConnectivityOptions(reading: &table)
        }
        let defaults = try read("")
        #expect(
            defaults.uri == nil && defaults.interval == .seconds(300) && defaults.timeout == .seconds(5)
                && ConnectivityProbe(defaults) == nil)
        let set = try read("uri = \"http://192.0.2.1/ok\"\nresponse = \"OK\"\ninterval = \"1m\"\ntimeout = \"2s\"\n")
        #expect(set.uri?.host == "192.0.2.1" && set.response == "OK" && set.interval == .seconds(60) && set.timeout == .seconds(2))
        let errors = [
            (
                "uri = \"https://x/\"",
                "c.toml:1: uri must be an http:// URL (\"http://connectivity-check.example.net/generate_204\"), not \"https://x/\""
            ),
            ("interval = \"5s\"", "c.toml:1: interval must be at least 10s, not 5s"),
            ("timeout = \"0s\"", "c.toml:1: timeout must be more than 0 and at most 1m, not 0s"),
            ("\nurl = \"http://x/\"", "c.toml:2: unknown key 'url' in [connectivity]")
        ]
        for (text, message) in errors {
            #expect { try read(text) } throws: { "\($0)" == message }
        }
    }
}
