import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Clients we did not write, on reachd's private socket: each writes `BEGIN` and its first
/// messages as it likes — dbus-send and gdbus right behind `BEGIN`, a raw client in the same
/// write — and every one is answered (docs/api.md, "The private socket").
@Suite("the private socket answers any D-Bus client, however it writes BEGIN", .serialized, .needsRoot, .ownThreads)
struct PrivateSocketClientsTests {
    static let attempts = 1_000

    static func withDaemon(_ body: (DaemonProcess) async throws -> Void) async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdbegin", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", "/dev/null"])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                try await body(daemon)
            }
        }
    }

    /// How many of `attempts` tries answered; it stops at the fourth that did not (each costs its 5 s).
    static func answered(_ attempt: () throws -> Bool) rethrows -> Int {
        var answered = 0, unanswered = 0
        for _ in 0 ..< attempts where unanswered <= 3 {
            if try attempt() { answered += 1 } else { unanswered += 1 }
        }
        return answered
    }

    /// How many runs of `command` answered within 5 s.
    static func answered(_ command: [String]) throws -> Int {
        try answered { try run(["timeout", "5"] + command, check: false).status == 0 }
    }

    @Test("dbus-send and gdbus, 1,000 times each: every call answered")
    func toolsAreAnswered() async throws {
        try await Self.withDaemon { daemon in
            let dbusSend = try Self.answered(["dbus-send", "--bus=\(daemon.address)", "--print-reply", "--dest=io.reachd.Reachability1",
                                              "/io/reachd/Reachability1", "io.reachd.Reachability1.Describe"])
            #expect(dbusSend == Self.attempts, "dbus-send answered \(dbusSend) of \(Self.attempts)")
            let gdbus = try Self.answered(["gdbus", "call", "--address", daemon.address, "--dest", "io.reachd.Reachability1",
                                           "--object-path", "/io/reachd/Reachability1", "--method", "io.reachd.Reachability1.Describe"])
            #expect(gdbus == Self.attempts, "gdbus answered \(gdbus) of \(Self.attempts)")
        }
    }

    @Test("a raw client that writes the authentication, BEGIN, Hello and a call in one write, 1,000 times: every call answered")
    func oneWriteIsAnswered() async throws {
        try await Self.withDaemon { daemon in
            let answered = try Self.answered { try RawClient.describeInOneWrite(socket: daemon.socket) }
            #expect(answered == Self.attempts, "answered \(answered) of \(Self.attempts)")
        }
    }
}

/// A D-Bus client in a few bytes: the SASL lines and two method calls, marshalled by hand.
enum RawClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Connects, writes everything at once, and says whether Describe's reply (serial 2) came within 5 s.
    static func describeInOneWrite(socket path: String) throws -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect: \(errno)") }
        let uid = Array(String(getuid()).utf8).map { String($0, radix: 16) }.joined()
        var bytes = Array("\0AUTH EXTERNAL \(uid)\r\nBEGIN\r\n".utf8)
        bytes += call(serial: 1, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello",
                      destination: "org.freedesktop.DBus")
        bytes += call(serial: 2, path: "/io/reachd/Reachability1", interface: "io.reachd.Reachability1", member: "Describe",
                      destination: "io.reachd.Reachability1")
        guard write(descriptor, bytes, bytes.count) == bytes.count else { throw Failure(description: "write: \(errno)") }
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) >= 0 else { continue }
            guard ready.revents != 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { return false }
            received += buffer[..<count]
            // The messages follow the server's one authentication line, "OK <guid>\r\n".
            guard let end = received.indices.first(where: { received[$0] == 10 && $0 > 0 && received[$0 - 1] == 13 }) else { continue }
            if replies(in: Array(received[(end + 1)...])).contains(2) { return true }
        }
        return false
    }

    /// A method call with no body, little-endian.
    static func call(serial: UInt32, path: String, interface: String, member: String, destination: String) -> [UInt8] {
        var fields: [UInt8] = []
        for (code, signature, value) in [(UInt8(1), "o", path), (2, "s", interface), (3, "s", member), (6, "s", destination)] {
            while fields.count % 8 != 0 { fields.append(0) }
            fields += [code, 1, UInt8(ascii: Unicode.Scalar(signature)!), 0]
            fields += littleEndian(UInt32(value.utf8.count)) + Array(value.utf8) + [0]
        }
        var message: [UInt8] = [UInt8(ascii: "l"), 1, 0, 1] + littleEndian(0) + littleEndian(serial) + littleEndian(UInt32(fields.count)) + fields
        while message.count % 8 != 0 { message.append(0) }
        return message
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

    /// The reply serials of the method returns and errors in `bytes` (header field 5).
    static func replies(in bytes: [UInt8]) -> [UInt32] {
        var serials: [UInt32] = []
        var offset = 0
        func u32(_ at: Int) -> UInt32 { UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24 }
        while offset + 16 <= bytes.count, bytes[offset] == UInt8(ascii: "l") {
            let bodyLength = Int(u32(offset + 4)), fieldsLength = Int(u32(offset + 12))
            let headerEnd = offset + 16 + fieldsLength
            // Each message's padding counts from its own start: a body need not end on 8 bytes.
            let total = (16 + fieldsLength + 7) / 8 * 8 + bodyLength
            guard offset + total <= bytes.count else { break }
            if bytes[offset + 1] == 2 || bytes[offset + 1] == 3 {
                var field = offset + 16
                while field < headerEnd {
                    field = (field - offset + 7) / 8 * 8 + offset
                    guard field + 4 <= headerEnd else { break }
                    let code = bytes[field], signatureLength = Int(bytes[field + 1])
                    var value = field + 2 + signatureLength + 1
                    let signature = bytes[field + 2]
                    if signature == UInt8(ascii: "u") {
                        value = (value - offset + 3) / 4 * 4 + offset
                        if code == 5 { serials.append(u32(value)) }
                        field = value + 4
                    } else if signature == UInt8(ascii: "g") {
                        field = value + 1 + Int(bytes[value]) + 1
                    } else {
                        value = (value - offset + 3) / 4 * 4 + offset
                        field = value + 4 + Int(u32(value)) + 1
                    }
                }
            }
            offset += total
        }
        return serials
    }
}
