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
@Suite("the private socket answers any D-Bus client, however it writes BEGIN", .serialized, .needsRoot, .ownThreads, .machineAlone)
struct PrivateSocketClientsTests {
    static let attempts = 1_000

    static func withDaemon(_ body: (DaemonProcess, TestNamespace) async throws -> Void) async throws {
        try await withScratch { scratch in
            try await withNamespaces("rdbegin", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", "/dev/null"])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                try await body(daemon, ns[0])
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
        try await Self.withDaemon { daemon, _ in
            let dbusSend = try Self.answered(["dbus-send", "--bus=\(daemon.address)", "--print-reply", "--dest=io.reachd.Reachability1",
                                              "/io/reachd/Reachability1", "io.reachd.Reachability1.Describe"])
            #expect(dbusSend == Self.attempts, "dbus-send answered \(dbusSend) of \(Self.attempts)")
            let gdbus = try Self.answered(["gdbus", "call", "--address", daemon.address, "--dest", "io.reachd.Reachability1",
                                           "--object-path", "/io/reachd/Reachability1", "--method", "io.reachd.Reachability1.Describe"])
            #expect(gdbus == Self.attempts, "gdbus answered \(gdbus) of \(Self.attempts)")
        }
    }

    @Test("a raw client that writes the authentication, BEGIN, Hello and a call in one write, 1,000 times: every call answered, and nothing of them kept")
    func oneWriteIsAnswered() async throws {
        try await Self.withDaemon { daemon, _ in
            _ = try RawClient.describeInOneWrite(socket: daemon.socket)
            let before = daemon.residentKilobytes
            let answered = try Self.answered { try RawClient.describeInOneWrite(socket: daemon.socket) }
            #expect(answered == Self.attempts, "answered \(answered) of \(Self.attempts)")
            // Each connection gone is forgotten at once, not at the next change of the path
            // (none comes here): kept, the 1,000 grew reachd by about 9 MiB.
            try await Task.sleep(for: .milliseconds(200))
            let after = daemon.residentKilobytes
            #expect(after - before < 2048, "reachd grew from \(before) to \(after) KiB over \(Self.attempts) connections")
        }
    }

    /// sd-bus clients (busctl, sd-bus apps) write Hello only once the authentication is
    /// answered, and drop the connection when anything but Hello's reply comes first.
    @Test("a change between a client's BEGIN and its Hello: Hello's reply is still the first message it gets")
    func helloReplyComesFirst() async throws {
        try await Self.withDaemon { daemon, namespace in
            for round in 0..<20 {
                let client = try RawClient(socket: daemon.socket)
                try client.send(RawClient.authentication)
                _ = client.messages(within: .milliseconds(50)) { _ in false }
                _ = try namespace.ip(round % 2 == 0 ? "route del default" : "route add default via 10.1.0.1")
                try await Task.sleep(for: .milliseconds(100))
                try client.send(RawClient.hello(serial: 1) + RawClient.describe(serial: 2))
                let messages = client.messages(within: .seconds(5)) { $0.contains { $0.replySerial == 2 } }
                #expect(messages.first?.replySerial == 1, "round \(round): the first message was \(String(describing: messages.first))")
            }
        }
    }

    @Test("a peer that says nothing is still sent the changes")
    func silentPeerIsSentChanges() async throws {
        try await Self.withDaemon { daemon, namespace in
            let client = try RawClient(socket: daemon.socket)
            try client.send(RawClient.authentication)
            _ = client.messages(within: .milliseconds(50)) { _ in false }
            _ = try namespace.ip("route del default")
            let messages = client.messages(within: .seconds(5)) { $0.contains { $0.member == "StatusChanged" } }
            #expect(messages.contains { $0.member == "StatusChanged" }, "received \(messages)")
        }
    }
}

/// A D-Bus client in a few bytes: the SASL lines and method calls, marshalled by hand,
/// written exactly when and how a test says.
final class RawClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A message received: its type (1 call, 2 return, 3 error, 4 signal), the call it
    /// answers (header field 5) and its member (field 3).
    struct Message: Equatable {
        let type: UInt8
        let replySerial: UInt32?
        let member: String?
    }

    let descriptor: Int32
    private var received: [UInt8] = []
    private var pastAuthentication = false

    init(socket path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(descriptor)
            throw Failure(description: "\(path) is too long for a socket address")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw Failure(description: "connect: \(errno)")
        }
    }

    deinit { close(descriptor) }

    /// The SASL exchange up to and with `BEGIN`, as this user.
    static var authentication: [UInt8] {
        let uid = Array(String(getuid()).utf8).map { String($0, radix: 16) }.joined()
        return Array("\0AUTH EXTERNAL \(uid)\r\nBEGIN\r\n".utf8)
    }

    static func hello(serial: UInt32) -> [UInt8] {
        call(serial: serial, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello", destination: "org.freedesktop.DBus")
    }

    static func describe(serial: UInt32) -> [UInt8] {
        call(serial: serial, path: "/io/reachd/Reachability1", interface: "io.reachd.Reachability1", member: "Describe",
             destination: "io.reachd.Reachability1")
    }

    /// Writes all of `bytes`; a peer that closed is an error, not a SIGPIPE.
    func send(_ bytes: [UInt8]) throws {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw Failure(description: "send: \(errno)") }
            written += count
        }
    }

    /// The messages received so far and within `timeout`, as soon as `enough` holds of them.
    func messages(within timeout: Duration, until enough: ([Message]) -> Bool) -> [Message] {
        let deadline = ContinuousClock.now + timeout
        var parsed = Self.messages(in: received)
        while !enough(parsed), ContinuousClock.now < deadline {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[..<count]
            // The messages follow the server's one authentication line, "OK <guid>\r\n".
            if !pastAuthentication {
                guard let end = received.indices.first(where: { received[$0] == 10 && $0 > 0 && received[$0 - 1] == 13 }) else { continue }
                received.removeFirst(end + 1)
                pastAuthentication = true
            }
            parsed = Self.messages(in: received)
        }
        return parsed
    }

    /// Connects, writes the authentication, Hello and Describe at once, and says whether Describe's reply came within 5 s.
    static func describeInOneWrite(socket path: String) throws -> Bool {
        let client = try RawClient(socket: path)
        try client.send(authentication + hello(serial: 1) + describe(serial: 2))
        return client.messages(within: .seconds(5)) { $0.contains { $0.replySerial == 2 } }.contains { $0.replySerial == 2 }
    }

    static func call(serial: UInt32, path: String, interface: String, member: String, destination: String) -> [UInt8] {
        DBusWire.call(serial: serial, path: path, interface: interface, member: member, destination: destination)
    }

    /// The whole messages at the start of `bytes` (little-endian, as sd-bus writes them).
    static func messages(in bytes: [UInt8]) -> [Message] {
        var messages: [Message] = []
        var offset = 0
        func u32(_ at: Int) -> UInt32 { UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24 }
        while offset + 16 <= bytes.count, bytes[offset] == UInt8(ascii: "l") {
            let bodyLength = Int(u32(offset + 4)), fieldsLength = Int(u32(offset + 12))
            let headerEnd = offset + 16 + fieldsLength
            // Each message's padding counts from its own start: a body need not end on 8 bytes.
            let total = (16 + fieldsLength + 7) / 8 * 8 + bodyLength
            guard offset + total <= bytes.count else { break }
            var replySerial: UInt32?, member: String?
            var field = offset + 16
            while field < headerEnd {
                field = (field - offset + 7) / 8 * 8 + offset
                guard field + 4 <= headerEnd else { break }
                let code = bytes[field], signatureLength = Int(bytes[field + 1])
                var value = field + 2 + signatureLength + 1
                let signature = bytes[field + 2]
                if signature == UInt8(ascii: "u") {
                    value = (value - offset + 3) / 4 * 4 + offset
                    if code == 5 { replySerial = u32(value) }
                    field = value + 4
                } else if signature == UInt8(ascii: "g") {
                    field = value + 1 + Int(bytes[value]) + 1
                } else {
                    value = (value - offset + 3) / 4 * 4 + offset
                    let length = Int(u32(value))
                    if code == 3 { member = String(decoding: bytes[(value + 4)..<(value + 4 + length)], as: UTF8.self) }
                    field = value + 4 + length + 1
                }
            }
            messages.append(Message(type: bytes[offset + 1], replySerial: replySerial, member: member))
            offset += total
        }
        return messages
    }
}
