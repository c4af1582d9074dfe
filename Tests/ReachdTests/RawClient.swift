import Foundation

#if canImport(Glibc)
import Glibc
#endif

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
        call(
            serial: serial, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello",
            destination: "org.freedesktop.DBus")
    }

    static func describe(serial: UInt32) -> [UInt8] {
        call(
            serial: serial, path: "/io/reachd/Reachability1", interface: "io.reachd.Reachability1", member: "Describe",
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
        func u32(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
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
