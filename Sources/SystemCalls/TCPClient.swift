import IPAddresses
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP connection for one short exchange (the connectivity probe):
/// optionally bound to one interface, every step under one deadline, closed on release.
/// Its failures are `SystemCallError`s: "connecting to 192.0.2.1:80", ETIMEDOUT when the deadline passed.
package final class TCPClient {
    private let socket: OwnedDescriptor
    private var descriptor: Int32 { socket.rawValue }
    private let deadline: ContinuousClock.Instant
    private let peer: String

    /// Connects to `address`:`port`. With `device`, the socket is bound to that
    /// interface (SO_BINDTODEVICE: unprivileged since Linux 5.7; where it is refused
    /// the kernel's own route is used, which is the path anyway).
    package init(connectingTo address: IPAddress, port: UInt16, device: String?, deadline: ContinuousClock.Instant) throws(SystemCallError)
    {
        self.deadline = deadline
        peer = address.family == .v6 ? "[\(address)]:\(port)" : "\(address):\(port)"
        socket = try .taking(
            Glibc.socket(
                address.family.kernelValue, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0),
            "creating a socket for \(peer)")
        if let device {
            _ = device.withCString { setsockopt(descriptor, SOL_SOCKET, SO_BINDTODEVICE, $0, socklen_t(strlen($0) + 1)) }
        }
        let scope = device.map { if_nametoindex($0) } ?? 0
        let started = Self.connect(descriptor, to: address, port: port, scope: scope)
        if started != 0 {
            guard errno == EINPROGRESS else { throw fail("connecting to \(peer)", errno) }
            try wait(for: Int16(POLLOUT), "connecting to \(peer)")
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else { throw fail("connecting to \(peer)", error) }
        }
    }

    private func fail(_ operation: String, _ code: Int32) -> SystemCallError {
        SystemCallError(operation, errno: Errno(rawValue: code))
    }

    private static func connect(_ descriptor: Int32, to address: IPAddress, port: UInt16, scope: UInt32) -> Int32 {
        switch address.family {
        case .v4:
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &socketAddress.sin_addr) { $0.copyBytes(from: address.bytes) }
            return connect(descriptor, &socketAddress)
        case .v6:
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            if address.isIPv6LinkLocal { socketAddress.sin6_scope_id = scope }
            withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { $0.copyBytes(from: address.bytes) }
            return connect(descriptor, &socketAddress)
        }
    }

    private static func connect<Address>(_ descriptor: Int32, _ address: inout Address) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<Address>.size)) }
        }
    }

    /// Waits until the socket is ready for `events`, or the deadline passes.
    private func wait(for events: Int16, _ operation: @autoclosure () -> String) throws(SystemCallError) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw fail(operation(), ETIMEDOUT) }
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = retryingOnInterrupt { poll(&entry, 1, milliseconds) }
            if ready > 0 { return }
            if ready < 0 { throw fail(operation(), errno) }
        }
    }

    /// Sends all of `bytes`.
    package func send(_ bytes: [UInt8]) throws(SystemCallError) {
        var sent = 0
        while sent < bytes.count {
            let count = retryingOnInterrupt {
                bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            if count > 0 {
                sent += count
            } else if count < 0, errno == EAGAIN {
                try wait(for: Int16(POLLOUT), "sending to \(peer)")
            } else {
                throw fail("sending to \(peer)", count < 0 ? errno : EPIPE)
            }
        }
    }

    /// Up to `limit` bytes; empty when the peer closed its side.
    package func receive(upTo limit: Int) throws(SystemCallError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = retryingOnInterrupt { buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) } }
            if count >= 0 { return Array(buffer.prefix(count)) }
            guard errno == EAGAIN else { throw fail("receiving from \(peer)", errno) }
            try wait(for: Int16(POLLIN), "receiving from \(peer)")
        }
    }
}
