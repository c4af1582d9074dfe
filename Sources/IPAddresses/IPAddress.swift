#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address in network byte order.
package struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    package enum Family: Sendable, Hashable {
        case v4, v6
        /// The kernel's address family constant.
        package var kernelValue: Int32 { self == .v4 ? AF_INET : AF_INET6 }
        package var byteCount: Int { self == .v4 ? 4 : 16 }
        package var bitCount: Int { byteCount * 8 }
    }

    package let family: Family
    /// 4 or 16 bytes, network byte order.
    package let bytes: [UInt8]

    package init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: family = .v4
        case 16: family = .v6
        default: return nil
        }
        self.bytes = bytes
    }

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text. A zone (`%eth0`) is not accepted.
    package init?(_ text: String) {
        var buffer = [UInt8](repeating: 0, count: 16)
        if text.contains(":") {
            guard inet_pton(AF_INET6, text, &buffer) == 1 else { return nil }
            self.init(bytes: buffer)
        } else {
            guard inet_pton(AF_INET, text, &buffer) == 1 else { return nil }
            self.init(bytes: Array(buffer.prefix(4)))
        }
    }

    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return bytes.withUnsafeBytes { raw in
            guard inet_ntop(family.kernelValue, raw.baseAddress, &text, socklen_t(text.count)) != nil else {
                return "?"
            }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// fe80::/10: needs an interface to mean anything.
    package var isIPv6LinkLocal: Bool {
        family == .v6 && bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80
    }

    package var isLoopback: Bool {
        switch family {
        case .v4: return bytes[0] == 127
        case .v6: return bytes.dropLast().allSatisfy { $0 == 0 } && bytes[15] == 1
        }
    }
}
