import Dispatch
import IPAddresses
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Resolves host names with the system resolver (`getaddrinfo`: /etc/hosts, DNS, nss).
package enum HostResolver {
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package let host: String
        package let reason: String
        package init(host: String, reason: String) {
            self.host = host
            self.reason = reason
        }
        package var description: String { "cannot resolve \(host): \(reason)" }
    }

    /// Whether `text` can be a host name to look up: at most 253 bytes, labels of
    /// 1–63 letters, digits, `-` and `_` (nss names like `_gateway` have them),
    /// with one trailing dot allowed. Checked before anything is asked of the resolver.
    package static func isHostName(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        let name = bytes.last == UInt8(ascii: ".") ? bytes.dropLast() : bytes[...]
        return name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.count)
                && label.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || byte == 0x2d || byte == 0x5f
                }
        }
    }

    /// The addresses of `host`, IPv4 first, without duplicates; a literal address
    /// is returned as it is, without asking anyone. Blocks while the resolver works.
    /// `family`: only addresses of that family (for IPv6, AAAA records alone: no mapped IPv4).
    package static func resolve(_ host: String, family: IPAddress.Family? = nil, limit: Int = 8) throws -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        var hints = addrinfo()
        hints.ai_family = family?.kernelValue ?? AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            let reason = status == EAI_SYSTEM ? "\(Errno(rawValue: errno))" : String(cString: gai_strerror(status))
            throw Failure(host: host, reason: reason)
        }
        defer { freeaddrinfo(list) }
        var found: [IPAddress] = []
        var entry = list
        while let current = entry?.pointee {
            entry = current.ai_next
            guard let socketAddress = current.ai_addr else { continue }
            let address: IPAddress?
            switch current.ai_family {
            case AF_INET:
                address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    withUnsafeBytes(of: $0.pointee.sin_addr) { IPAddress(bytes: Array($0)) }
                }
            case AF_INET6:
                address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    withUnsafeBytes(of: $0.pointee.sin6_addr) { IPAddress(bytes: Array($0)) }
                }
            default:
                address = nil
            }
            if let address, !found.contains(address) { found.append(address) }
        }
        let ordered = found.filter { $0.family == .v4 } + found.filter { $0.family == .v6 }
        return Array(ordered.prefix(limit))
    }

    /// `resolve(_:family:limit:)`, waiting at most `timeout` for the resolver: past it the
    /// lookup goes on, on a thread of its own (`getaddrinfo` cannot be cancelled), and the
    /// caller has its failure. The time is the resolver's: no shared pool's queue is in it.
    /// For a caller's thread that must not wait the resolver's own time (5 s per server
    /// that does not answer, per resolv.conf(5)).
    /// `lookup` is the resolver (tests give one that takes its time).
    package static func resolve(
        _ host: String, family: IPAddress.Family? = nil, limit: Int = 8, timeout: Duration,
        lookup: (@Sendable (String) throws -> [IPAddress])? = nil
    ) throws -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        let lookup = lookup ?? { try resolve($0, family: family, limit: limit) }
        final class Answer: Sendable { let result = Mutex<Result<[IPAddress], any Error>?>(nil) }
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        DedicatedThread.detach(.lookup) {
            answer.result.withLock { $0 = Result { try lookup(host) } }
            done.signal()
        }
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        guard done.wait(timeout: .now() + .nanoseconds(Int(clamping: max(0, nanoseconds)))) == .success,
            let result = answer.result.withLock({ $0 })
        else {
            throw Failure(host: host, reason: "no answer within \(timeout)")
        }
        return try result.get()
    }
}
