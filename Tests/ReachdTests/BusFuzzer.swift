import Foundation
import NamespaceTesting
import TestTraits

#if canImport(Glibc)
import Glibc
#endif

/// Bad input for a D-Bus server, from a seed: every method and property its
/// introspection declares, called with wrong signatures, huge and non-UTF-8
/// strings, absurd destinations and interface-type lists; floods of watches from
/// one connection; connections that never read; malformed authentication;
/// truncated and corrupted messages. The same seed sends the same bytes.
final class BusFuzzer {
    /// What a server declares: each method with its input signature, each property with its type.
    struct Surface {
        struct Member {
            let destination: String
            let path: String
            let interface: String
            let name: String
            /// A method's input signature; a property's type.
            let signature: String
        }

        var methods: [Member] = []
        var properties: [Member] = []

        /// Reads `destination`'s introspection at `paths` through busctl on `address`.
        static func discover(address: String, destination: String, paths: [String]) throws -> Surface {
            var surface = Surface()
            for path in paths {
                let xml = try NamespaceTesting.run(["busctl", "--address=\(address)", "introspect", "--xml-interface", destination, path])
                    .output
                for interface in xml.split(separator: "<interface name=\"").dropFirst() {
                    let name = String(interface.prefix { $0 != "\"" })
                    for method in interface.split(separator: "<method name=\"").dropFirst() {
                        // Signals' arguments have no direction: only this method's inputs count.
                        let body = method[..<(method.range(of: "</method>")?.lowerBound ?? method.endIndex)]
                        let inputs = body.split(separator: "<arg ").filter { $0.contains("direction=\"in\"") }
                            .compactMap { $0.split(separator: "type=\"").dropFirst().first?.prefix { $0 != "\"" } }
                        surface.methods.append(
                            Member(
                                destination: destination, path: path, interface: name,
                                name: String(method.prefix { $0 != "\"" }), signature: inputs.joined()))
                    }
                    for property in interface.split(separator: "<property name=\"").dropFirst() {
                        let type = property.split(separator: "type=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
                        surface.properties.append(
                            Member(
                                destination: destination, path: path, interface: name,
                                name: String(property.prefix { $0 != "\"" }), signature: String(type)))
                    }
                }
            }
            return surface
        }
    }

    /// What was sent, by kind.
    struct Tally: CustomStringConvertible {
        var messages = 0
        var connections = 0
        var byKind: [String: Int] = [:]
        var description: String {
            "\(messages) messages on \(connections) connections ("
                + byKind.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
    }

    let socket: String
    /// A bus (its clients say Hello and name a destination) rather than reachd's private socket.
    let isBus: Bool
    let surface: Surface
    private(set) var tally = Tally()
    private var random: SeededGenerator
    private var serial: UInt32 = 1
    /// Connections that never read, kept open to the end of the run.
    private var silent: [RawClient] = []

    init(socket: String, isBus: Bool, surface: Surface, seed: UInt64) {
        self.socket = socket
        self.isBus = isBus
        self.surface = surface
        random = SeededGenerator(seed: seed)
    }

    /// Sends `count` messages (give or take a flood's), calling `checkpoint` with the count every `every`.
    func fuzz(messages count: Int, every: Int, checkpoint: (Int) async throws -> Void) async throws {
        var next = every
        while tally.messages < count {
            try round()
            if tally.messages >= next {
                try await checkpoint(tally.messages)
                next += every
            }
        }
        silent.removeAll()
    }

    // MARK: Values

    private func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    private func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    private static let destinations = [
        "", "1.1.1.1", "::1", "256.256.256.256", "10.1.0.1:99999", "[::1]", "fe80::1%999999", "example.invalid", "localhost",
        String(repeating: "a.", count: 200), String(repeating: "9", count: 400), "-1", "0", "0.0.0.0", "::", "ff02::1", "127.0.0.1/8",
        "$(reboot)", "../../../../etc/passwd", "%n%n%n%n", "1.2.3.4\n", " 10.1.0.1", "xn--zz", "*", "64:ff9b::1.2.3.4"
    ]
    private static let interfaceTypes = [
        "", "wifi", "wired,cellular", "wifi,wifi,wifi", "WIFI", "loopback,other", ",,,,", String(repeating: "wired,", count: 2000),
        "vpn", "unknown", "\u{7f}", "wired;wifi"
    ]

    private func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) } }

    /// A string argument: meaningful, absurd, huge, or not UTF-8.
    private func string(for member: String) -> [UInt8] {
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<2: return Array(repeating: UInt8(ascii: "x"), count: Int.random(in: 65_536...1_048_576, using: &random))
        case 2..<10: return [0xC3, 0x28, 0xFF, 0xFE] + bytes(Int.random(in: 0...16, using: &random))
        case 10..<40: return Array(pick(Self.interfaceTypes).utf8)
        case 40..<45: return Array(pick(surface.methods.map(\.name) + surface.properties.map(\.name)).utf8)
        default: return Array(pick(Self.destinations).utf8)
        }
    }

    /// A value of the D-Bus type `code` (one complete type's first character).
    private func value(_ code: Character, member: String) -> DBusWire.Value {
        switch code {
        case "y": .byte(UInt8.random(in: 0...255, using: &random))
        case "b": .boolean(pick([0, 1, 2, UInt32.max]))
        case "i": .int32(Int32.random(in: .min ... .max, using: &random))
        case "u": .uint32(UInt32.random(in: 0 ... .max, using: &random))
        case "o": .objectPath(Array(pick(["/", "/io/reachd/Reachability1", "//", "/a/", "/x-y"]).utf8))
        case "g": .signature(Array(pick(["s", "a{sv}", "((((", "", "zz"]).utf8))
        case "v": .variant(signature: "s", .string(string(for: member)))
        case "a": .strings((0..<Int.random(in: 0...4, using: &random)).map { _ in string(for: member) })
        default: .string(string(for: member))
        }
    }

    /// Values for `signature`, or for a wrong one.
    private func arguments(_ signature: String, member: String) -> [DBusWire.Value] {
        let codes =
            chance(30)
            ? Array(pick(["", "s", "ss", "sss", "u", "b", "as", "v", "su", "ssss"]))
            : Array(signature.replacingOccurrences(of: "as", with: "a"))
        return codes.map { value($0, member: member) }
    }

    // MARK: Messages

    private func nextSerial() -> UInt32 {
        serial = serial == UInt32.max ? 1 : serial + 1
        return serial
    }

    private func destination(_ member: Surface.Member) -> String? { isBus ? member.destination : pick([member.destination, nil]) }

    /// A call of a declared method, its arguments right, wrong or absurd.
    private func methodCall() -> [UInt8] {
        let method = pick(surface.methods)
        return DBusWire.call(
            serial: nextSerial(), path: method.path, interface: chance(95) ? method.interface : nil, member: method.name,
            destination: destination(method), arguments(method.signature, member: method.name))
    }

    /// Get, GetAll or Set of a declared property, or of one nobody declared.
    private func propertyCall() -> [UInt8] {
        let property = pick(surface.properties)
        let interface = chance(90) ? property.interface : "io.reachd.Nothing"
        let name = chance(90) ? property.name : String(decoding: string(for: property.name).prefix(300), as: UTF8.self)
        let (member, values): (String, [DBusWire.Value]) =
            switch Int.random(in: 0..<3, using: &random) {
            case 0: ("Get", [.text(interface), .text(name)])
            case 1: ("GetAll", [.text(interface)])
            default:
                (
                    "Set",
                    [
                        .text(interface), .text(name),
                        .variant(
                            signature: property.signature == "b" ? "b" : "s",
                            property.signature == "b" ? .boolean(1) : .string(string(for: name)))
                    ]
                )
            }
        return DBusWire.call(
            serial: nextSerial(), path: property.path, interface: "org.freedesktop.DBus.Properties", member: member,
            destination: destination(property), values)
    }

    /// A call of what nobody declared: another path, interface or member, the standard interfaces.
    private func strayCall() -> [UInt8] {
        let method = pick(surface.methods)
        let (path, interface, member) = pick([
            ("/", "org.freedesktop.DBus.Introspectable", "Introspect"),
            (method.path, "org.freedesktop.DBus.Peer", "Ping"),
            (method.path, "org.freedesktop.DBus.Peer", "GetMachineId"),
            ("/io/reachd", method.interface, method.name),
            (method.path, method.interface, "Nothing"),
            (method.path, "org.freedesktop.DBus", "Hello"),
            ("/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch"),
            ("/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName")
        ])
        return DBusWire.call(
            serial: nextSerial(), path: path, interface: interface, member: member,
            destination: isBus ? method.destination : nil, arguments(pick(["", "s", "su"]), member: member))
    }

    /// A valid message, then damaged: bytes flipped, or cut short.
    private func damaged() -> (bytes: [UInt8], kind: String) {
        var message = chance(50) ? methodCall() : propertyCall()
        if chance(50) {
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let index = Int.random(in: 0..<message.count, using: &random)
                message[index] ^= UInt8.random(in: 1...255, using: &random)
            }
            return (message, "corrupted")
        }
        return (Array(message.prefix(Int.random(in: 1..<message.count, using: &random))), "truncated")
    }

    // MARK: Connections

    /// One connection's worth: a kind of abuse chosen at random.
    private func round() throws {
        let client = try RawClient(socket: socket)
        tally.connections += 1
        if !isBus && chance(5) { return try malformedAuthentication(client) }
        var opening = RawClient.authentication
        if isBus || chance(50) { opening += RawClient.hello(serial: nextSerial()) }
        var calls: [[UInt8]] = []
        let kind: String
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<45:
            kind = "methods"
            calls = (0..<Int.random(in: 1...16, using: &random)).map { _ in methodCall() }
        case 45..<65:
            kind = "properties"
            calls = (0..<Int.random(in: 1...16, using: &random)).map { _ in propertyCall() }
        case 65..<75:
            kind = "stray"
            calls = (0..<Int.random(in: 1...8, using: &random)).map { _ in strayCall() }
        case 75..<95:
            let (bytes, damage) = damaged()
            kind = damage
            calls = [bytes]
        case 95..<98:
            kind = "watch-flood"
            let watch = surface.methods.filter { ["WatchPath", "WatchInterfaces"].contains($0.name) }
            calls =
                watch.isEmpty
                ? []
                : (0..<100).map { index in
                    let method = pick(watch)
                    return DBusWire.call(
                        serial: nextSerial(), path: method.path, interface: method.interface, member: method.name,
                        destination: destination(method),
                        method.name == "WatchPath"
                            ? [.text("10.\(index / 250).\(index % 250).1"), .string(Array(pick(Self.interfaceTypes).utf8))] : [])
                }
        default:
            kind = "never-read"
            let method = pick(surface.methods.filter { $0.signature.isEmpty })
            calls = (0..<300).map { _ in
                DBusWire.call(
                    serial: nextSerial(), path: method.path, interface: method.interface, member: method.name,
                    destination: destination(method))
            }
        }
        tally.byKind[kind, default: 0] += calls.count
        tally.messages += calls.count
        // Everything in one write, as a client may: the server must sort it out (and may close on it).
        try? client.send(opening + calls.joined())
        if kind == "never-read" {
            silent.append(client)
            if silent.count > 16 { silent.removeFirst() }
        } else {
            // Read what comes for a moment: an answer, an error, or the server closing.
            _ = client.messages(within: .milliseconds(kind == "methods" || kind == "watch-flood" ? 100 : 20)) { messages in
                messages.count(where: { $0.type == 2 || $0.type == 3 }) >= calls.count
                    + (opening.count > RawClient.authentication.count ? 1 : 0)
            }
        }
    }

    /// Authentication as no client should: garbage, lines too long, no BEGIN, the wrong mechanism.
    private func malformedAuthentication(_ client: RawClient) throws {
        let attempt: [UInt8] =
            switch Int.random(in: 0..<6, using: &random) {
            case 0: bytes(Int.random(in: 1...4096, using: &random))
            case 1: Array("\0AUTH EXTERNAL ".utf8) + Array(repeating: UInt8(ascii: "3"), count: 20_000) + Array("\r\n".utf8)
            case 2: Array("\0AUTH EXTERNAL 30\r\n".utf8)
            case 3: Array("\0AUTH ANONYMOUS\r\nAUTH DBUS_COOKIE_SHA1 726f6f74\r\nCANCEL\r\nERROR\r\nBEGIN\r\n".utf8)
            case 4: Array("AUTH EXTERNAL\r\nBEGIN\r\n".utf8)
            default: Array("\0AUTH EXTERNAL 3939393939\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n".utf8) + methodCall()
            }
        tally.byKind["authentication", default: 0] += 1
        tally.messages += 1
        try? client.send(attempt)
        _ = client.messages(within: .milliseconds(20)) { _ in false }
    }
}
