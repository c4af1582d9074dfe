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

    /// The text `inet_ntop` writes (RFC 5952 for IPv6, as glibc does it), built
    /// here: addresses are formatted for every path document and log line,
    /// and glibc's goes through `sprintf` for each number.
    package var description: String {
        var text: [UInt8] = []
        text.reserveCapacity(family == .v4 ? 15 : 45)
        if family == .v4 {
            Self.appendDottedQuad(bytes[0..<4], to: &text)
        } else {
            appendIPv6(to: &text)
        }
        return String(decoding: text, as: UTF8.self)
    }

    private func appendIPv6(to text: inout [UInt8]) {
        let words = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        // The longest run of zero words (the first of equal ones), if two or more long, becomes "::".
        var best = (start: -1, count: 0)
        var current = (start: -1, count: 0)
        for index in 0...8 {
            if index < 8, words[index] == 0 {
                current = current.start < 0 ? (index, 1) : (current.start, current.count + 1)
            } else if current.start >= 0 {
                if current.count > best.count { best = current }
                current = (-1, 0)
            }
        }
        if best.count < 2 { best = (-1, 0) }
        let colon = UInt8(ascii: ":")
        var index = 0
        while index < 8 {
            if index == best.start {
                text.append(colon)
                index += best.count
                if index == 8 { text.append(colon) }
                continue
            }
            if index != 0 { text.append(colon) }
            // ::a.b.c.d and ::ffff:a.b.c.d keep their IPv4 part dotted, as glibc writes them.
            if index == 6, best.start == 0, best.count == 6 || (best.count == 5 && words[5] == 0xffff) {
                Self.appendDottedQuad(bytes[12..<16], to: &text)
                return
            }
            Self.appendHex(words[index], to: &text)
            index += 1
        }
    }

    private static func appendDottedQuad(_ quad: ArraySlice<UInt8>, to text: inout [UInt8]) {
        for (position, byte) in quad.enumerated() {
            if position > 0 { text.append(UInt8(ascii: ".")) }
            if byte >= 100 { text.append(UInt8(ascii: "0") + byte / 100) }
            if byte >= 10 { text.append(UInt8(ascii: "0") + byte / 10 % 10) }
            text.append(UInt8(ascii: "0") + byte % 10)
        }
    }

    private static func appendHex(_ word: UInt16, to text: inout [UInt8]) {
        var shift = 12
        while shift > 0, word >> UInt16(shift) == 0 { shift -= 4 }
        while shift >= 0 {
            let digit = UInt8(word >> UInt16(shift) & 0xf)
            text.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            shift -= 4
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
