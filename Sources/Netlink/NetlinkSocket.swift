import CNetlink
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// An `NETLINK_ROUTE` socket from libnl, with a receive buffer of its own so
/// that `ENOBUFS` and `EAGAIN` reach us as they are (libnl folds both away).
/// Not thread-safe: one thread owns it.
final class NetlinkSocket {
    let handle: OpaquePointer
    let fileDescriptor: Int32
    private let buffer: UnsafeMutableRawBufferPointer

    /// Kernel messages (link dumps on hosts with many VFs included) fit in 64 KiB.
    static let bufferSize = 64 * 1024

    init() throws {
        guard let socket = nl_socket_alloc() else {
            throw NetlinkError.libnl(operation: "allocating a netlink socket", code: NLE_NOMEM)
        }
        let status = nl_connect(socket, NETLINK_ROUTE)
        guard status == 0 else {
            nl_socket_free(socket)
            throw NetlinkError.libnl(operation: "connecting a netlink socket", code: -status)
        }
        // Replies are matched by sequence number by hand; kernel events carry 0.
        nl_socket_disable_seq_check(socket)
        nl_socket_disable_auto_ack(socket)
        handle = socket
        fileDescriptor = nl_socket_get_fd(socket)
        buffer = .allocate(byteCount: Self.bufferSize, alignment: 8)
    }

    deinit {
        buffer.deallocate()
        nl_socket_free(handle)
    }

    /// Sets `SO_RCVBUF`, and `SO_RCVBUFFORCE` (beyond `rmem_max`) where privileged.
    /// Returns what the kernel granted (it doubles the request for bookkeeping).
    @discardableResult
    func setReceiveBufferSize(_ bytes: Int) -> Int {
        var value = Int32(clamping: bytes)
        let size = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUFFORCE, &value, size) != 0 {
            _ = setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUF, &value, size)
        }
        var granted: Int32 = 0
        var length = size
        getsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUF, &granted, &length)
        return Int(granted)
    }

    func setReceiveTimeout(milliseconds: Int) {
        var timeout = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func join(group: Int32) throws {
        let status = nl_socket_add_membership(handle, group)
        guard status == 0 else {
            throw NetlinkError.libnl(operation: "joining rtnetlink group \(group)", code: -status)
        }
    }

    enum Received {
        case messages(Int)
        case wouldBlock
        case overrun
    }

    /// Reads one datagram into the socket's buffer.
    func receive(blocking: Bool, operation: @autoclosure () -> String) throws -> Received {
        let count = retryingOnInterrupt { recv(fileDescriptor, buffer.baseAddress, buffer.count, blocking ? 0 : Int32(MSG_DONTWAIT)) }
        if count >= 0 { return .messages(count) }
        switch errno {
        case EAGAIN where !blocking: return .wouldBlock
        case EAGAIN: throw NetlinkError.timedOut(operation: operation())
        case ENOBUFS: return .overrun
        default: throw NetlinkError.lastSystemError(operation())
        }
    }

    /// Calls `body` for each message of the datagram last received (`count` bytes).
    func forEachMessage(in count: Int, _ body: (UnsafeMutablePointer<nlmsghdr>) throws -> Void) rethrows {
        try Self.forEachMessage(in: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), body)
    }

    /// Calls `body` for each whole message in `datagram` (4-byte aligned, as the kernel's).
    static func forEachMessage(
        in datagram: UnsafeMutableRawBufferPointer,
        _ body: (UnsafeMutablePointer<nlmsghdr>) throws -> Void
    ) rethrows {
        guard let start = datagram.baseAddress else { return }
        var remaining = Int32(datagram.count)
        var header = start.assumingMemoryBound(to: nlmsghdr.self)
        while nlmsg_ok(header, remaining) != 0 {
            try body(header)
            header = nlmsg_next(header, &remaining)
        }
    }

    private static let requestCapacity = 512

    /// Sends a request built by `build` and returns its sequence number.
    func send(
        type: UInt16, flags: Int32, operation: @autoclosure () -> String,
        build: (OpaquePointer) -> Int32
    ) throws -> UInt32 {
        // Every request reachd sends is under 100 bytes; libnl's default message is a
        // zeroed page, which cost more than the rest of a route lookup (BENCHMARKS.md §23).
        guard let message = nlmsg_alloc_size(Self.requestCapacity) else {
            throw NetlinkError.libnl(operation: operation(), code: NLE_NOMEM)
        }
        defer { nlmsg_free(message) }
        guard nlmsg_put(message, UInt32(NL_AUTO_PORT), UInt32(NL_AUTO_SEQ), Int32(type), 0, flags) != nil else {
            throw NetlinkError.libnl(operation: operation(), code: NLE_NOMEM)
        }
        let built = build(message)
        guard built >= 0 else { throw NetlinkError.libnl(operation: operation(), code: -built) }
        let sent = nl_send_auto(handle, message)
        guard sent >= 0 else { throw NetlinkError.libnl(operation: operation(), code: -sent) }
        return nlmsg_hdr(message).pointee.nlmsg_seq
    }
}

extension UnsafeMutablePointer<nlmsghdr> {
    /// The payload after the header, as the fixed struct `T`.
    func payload<T>(as type: T.Type) -> T? {
        guard Int(pointee.nlmsg_len) >= Int(nlmsg_size(Int32(MemoryLayout<T>.size))) else { return nil }
        return nlmsg_data(self).loadUnaligned(as: T.self)
    }

    /// Calls `body` with each top-level attribute after the fixed header of `headerSize` bytes.
    func forEachAttribute(headerSize: Int, _ body: (UnsafeMutablePointer<nlattr>) -> Void) {
        guard var attribute = nlmsg_attrdata(self, Int32(headerSize)) else { return }
        var remaining = nlmsg_attrlen(self, Int32(headerSize))
        while nla_ok(attribute, remaining) != 0 {
            body(attribute)
            attribute = nla_next(attribute, &remaining)
        }
    }
}

extension UnsafeMutablePointer<nlattr> {
    var type: UInt16 { UInt16(truncatingIfNeeded: nla_type(self)) }
    var bytes: [UInt8] { Array(UnsafeRawBufferPointer(start: nla_data(self), count: Int(nla_len(self)))) }
    /// 0 for an attribute too short to hold one (nla_get_u32 would read past it).
    var u32: UInt32 { nla_len(self) >= 4 ? nla_get_u32(self) : 0 }
    /// nil for an empty attribute.
    var u8: UInt8? { nla_len(self) >= 1 ? nla_get_u8(self) : nil }
    /// A NUL-terminated string attribute (its end, without a NUL).
    var string: String {
        let raw = UnsafeRawBufferPointer(start: nla_data(self), count: Int(nla_len(self)))
        return String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Calls `body` with each attribute nested in this one.
    func forEachNested(_ body: (UnsafeMutablePointer<nlattr>) -> Void) {
        guard var attribute = nla_data(self)?.assumingMemoryBound(to: nlattr.self) else { return }
        var remaining = nla_len(self)
        while nla_ok(attribute, remaining) != 0 {
            body(attribute)
            attribute = nla_next(attribute, &remaining)
        }
    }
}
