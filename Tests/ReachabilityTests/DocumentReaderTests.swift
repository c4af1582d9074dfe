import Foundation
import Reachability
import TestTraits
import Testing

/// `Path(json:)` and `InterfaceChange(json:)` read with the project's own JSON reader;
/// whatever Foundation's `JSONDecoder` makes of a document, they must make too.
/// On threads of its own: 20,000 documents read twice keep a thread busy for seconds.
@Suite("Document reader", .ownThreads)
struct DocumentReaderTests {
    /// A path with every part filled in, and text that needs escapes.
    static var full: Path {
        var path = PathDocumentTests.sample
        path.status = .wired
        path.vpn = .init(name: "tun0", index: 9, kind: .tunnel)
        path.clat = .init(name: "clat", index: 7, kind: .tunnel)
        path.interfaces.append(
            .init(name: "wlan0 é\u{1F600}", index: 3, kind: .wifi, operstate: "dormant", up: true, carrier: false, addresses: []))
        path.destination = "quote\" back\\slash \u{01} tab\t /slash"
        path.routes.append(
            .init(
                destination: "2001:db8::1", status: .unreachable, reason: .noRoute, interface: nil, gateway: nil, source: nil,
                nat64: "64:ff9b::/96"))
        path.dns = .init(source: .resolvConf, servers: ["192.0.2.53", "2001:db8::53"], usable: ["192.0.2.53"])
        path.capport = .init(
            api: "https://portal.example/api", source: .networkd, interface: "eth0", captive: true,
            userPortalURL: "https://portal.example/login", expires: Date(timeIntervalSince1970: 1_795_345_200),
            bytesRemaining: 9_007_199_254_740_993, canExtendSession: false)
        path.nat64 = .init(prefix: "64:ff9b::/96", source: .routerAdvertisement, interface: "eth0", lifetime: 1800)
        path.connectivity = .portal
        path.portal = "https://portal.example/login"
        return path
    }

    static var documents: [String] {
        var unreachable = PathDocumentTests.sample
        (unreachable.status, unreachable.reason, unreachable.interface, unreachable.interfaces) = (.unreachable, .noCarrier, nil, [])
        let change = InterfaceChange(
            interface: .init(name: "veth1", index: 40, kind: .veth, operstate: "up", up: true, carrier: true, addresses: ["10.0.0.1/24"]),
            master: "cni0", available: true)
        return [
            full.jsonString(), PathDocumentTests.sample.jsonString(), unreachable.jsonString(), change.jsonString(),
            InterfaceChange.jsonArray([change, change])
        ]
    }

    /// What each reader makes of `text`: the value, or nil when it refuses it.
    static func bothReaders(_ text: String) -> (ours: String?, foundation: String?) {
        func describe<T>(_ read: () throws -> T) -> String? { (try? read()).map { "\($0)" } }
        if text.hasPrefix("[") {
            return (
                describe { try InterfaceChange.decodeArray(text) },
                describe { try JSONDecoder().decode([InterfaceChange].self, from: Data(text.utf8)) }
            )
        }
        if text.contains("\"operstate\""), !text.contains("\"status\"") {
            return (
                describe { try InterfaceChange(json: text) },
                describe { try JSONDecoder().decode(InterfaceChange.self, from: Data(text.utf8)) }
            )
        }
        return (describe { try Path(json: text) }, describe { try JSONDecoder().decode(Path.self, from: Data(text.utf8)) })
    }

    @Test("every document reachd writes reads back to itself, as JSONDecoder reads it")
    func documentsRoundTrip() throws {
        #expect(try Path(json: Self.full.jsonString()) == Self.full)
        for document in Self.documents {
            let (ours, foundation) = Self.bothReaders(document)
            #expect(ours != nil && ours == foundation, "\(document)")
        }
    }

    @Test(
        "the grammar's corners are read, or refused, as JSONDecoder does",
        arguments: [
            // Escapes, and a key written twice (the last counts).
            ("\"status\":\"wired\"", "\"status\":\"w\\u0069red\""),
            ("\"status\":\"wired\"", "\"status\":\"unreachable\",\"status\":\"wired\""),
            ("\"status\":\"wired\"", "\"status\":\"wired\",\"destination\":\"\\ud83d\\ude00 \\u00e9 \\/ \\b\\f\\n\\r\\t\""),
            // Refused: lone surrogates, raw control characters, unknown escapes, bad literals.
            ("\"ipv4\":true", "\"ipv4\":true,\"portal\":\"\\ud83d\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"portal\":\"\\ude00x\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"portal\":\"\\ud83d\\u0041\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"portal\":\"a\u{01}b\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"portal\":\"\\x41\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"portal\":\"\\u12G4\""),
            // A `\u` takes four bytes when scanned, never a quote, even in a field nobody reads.
            ("\"ipv4\":true", "\"ipv4\":true,\"unknown\":\"\\u006\",\"x\":\"\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"unknown\":\"\\u00\"x\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"unknown\":\"\\u0\\\"x\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"unknown\":\"\\u0\\\\x\""),
            ("\"ipv4\":true", "\"ipv4\":true,\"unknown\":\"\\u12G4\\u0\\u0041\""),
            ("\"ipv4\":true", "\"ipv4\":tru"), ("\"ipv4\":true", "\"ipv4\":TRUE"), ("\"vpn\":{", "\"vpn\":nul,\"x\":{"),
            // Numbers: an integer written as a number that is one, and those that are not.
            ("\"index\":2", "\"index\":2.0"), ("\"index\":2", "\"index\":2e0"), ("\"index\":2", "\"index\":0.2e1"),
            ("\"index\":2", "\"index\":2.5"), ("\"index\":2", "\"index\":02"), ("\"index\":2", "\"index\":-"),
            ("\"index\":2", "\"index\":2."), ("\"index\":2", "\"index\":.2"), ("\"index\":2", "\"index\":2e"),
            ("\"index\":2", "\"index\":99999999999999999999"), ("\"index\":2", "\"index\":1e400"),
            ("\"index\":2", "\"index\":0." + String(repeating: "0", count: 19_999) + "2e20000"),
            ("\"index\":2", "\"index\":200000000000000000000000000000e-29"),
            ("\"index\":2", "\"index\":123456789012345678901234567890e-20"),
            ("\"index\":2", "\"index\":-0"), ("\"index\":2", "\"index\":\"2\""), ("\"index\":2", "\"index\":true"),
            ("\"lifetime\":1800", "\"lifetime\":null"),
            ("\"bytes-remaining\":9007199254740993", "\"bytes-remaining\":9.007199254740993e15"),
            // Structure.
            ("\"ipv4\":true", "\"ipv4\":true,"), ("\"ipv6\":false", "\"ipv6\":false}"), ("\"routes\":[", "\"routes\":[,"),
            ("\"routes\":[", "\"routes\": [\n "), ("\"usable\":[\"192.0.2.53\"]", "\"usable\":[\"192.0.2.53\",]"),
            ("\"ipv4\":true", "\"ipv4\" true"), ("\"ipv4\":true", "ipv4:true"), ("\"ipv4\":true", "\"ipv4\" : true ")
        ])
    func grammar(original: String, replacement: String) {
        let full = Self.full.jsonString()
        let text = full.replacingOccurrences(of: original, with: replacement)
        #expect(text != full, "\(original) is not in the document")
        let (ours, foundation) = Self.bothReaders(text)
        #expect(
            ours == foundation,
            "\(replacement): ours \(ours == nil ? "refused" : "read"), JSONDecoder \(foundation == nil ? "refused" : "read")")
    }

    @Test("64 levels are read, 65 refused (JSONDecoder reads 512); text after the document is refused, whitespace around it not")
    func depthAndTrailing() throws {
        let full = Self.full.jsonString()
        func nested(_ depth: Int) -> String {
            let value = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            return full.replacingOccurrences(of: "\"ipv4\":true", with: "\"unknown\":\(value),\"ipv4\":true")
        }
        #expect(try Path(json: nested(63)) == Self.full, "the path's object is the 64th level")
        #expect(throws: DecodingError.self) { try Path(json: nested(64)) }
        #expect(Self.bothReaders(nested(64)).foundation != nil)
        #expect(Self.bothReaders(nested(600)) == (nil, nil))
        // JSONDecoder traps on this one (SIGILL; BENCHMARKS.md §26), so only the reader is asked.
        #expect(throws: DecodingError.self) { try InterfaceChange.decodeArray(String(repeating: "[", count: 513)) }
        for tail in [" x", "{}", "]", "\u{0}"] {
            #expect(Self.bothReaders(full + tail) == (nil, nil), "\(tail)")
        }
        #expect(Self.bothReaders("") == (nil, nil))
        let spaced = Self.bothReaders(" \n\t" + full + " \r\n")
        #expect(spaced.ours != nil && spaced == Self.bothReaders(full))
    }

    /// Seeded, so a failure names the document that made it.
    @Test("20,000 documents mutated byte by byte: each read, or refused, as JSONDecoder does")
    func mutations() {
        var generator = SeededGenerator(seed: 20_261_129)
        let alphabet = Array("{}[]\":,\\ -+.0123456789eEtrufalsn\u{1F}aé".utf8)
        var disagreements: [String] = []
        for round in 0..<20_000 {
            let documents = Self.documents
            var bytes = Array(documents[round % documents.count].utf8)
            for _ in 0...(generator.next() % 3) {
                let at = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 4 {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                case 2: bytes[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                default:
                    // A piece written again elsewhere: keys twice, values in odd places.
                    let length = min(bytes.count - at, 1 + Int(generator.next() % 24))
                    bytes.insert(contentsOf: bytes[at..<at + length], at: Int(generator.next() % UInt64(bytes.count)))
                }
            }
            guard let text = String(validating: bytes, as: UTF8.self) else { continue }
            let (ours, foundation) = Self.bothReaders(text)
            if ours != foundation, disagreements.count < 5 {
                disagreements.append(
                    "\(ours == nil ? "refused" : "read") what JSONDecoder \(foundation == nil ? "refused" : "read"): \(text)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
    }
}
