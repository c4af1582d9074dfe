/// An IPv6 prefix that a NAT64 translates to and from IPv4 (RFC 6052): an IPv4
/// address is written into it at a place that depends on its length, skipping
/// bits 64–71 (the "u" octet, always zero).
package struct NAT64Prefix: Hashable, Sendable, CustomStringConvertible {
    /// The prefix's bits; everything past `length` is zero.
    package let address: IPAddress
    /// 32, 40, 48, 56, 64 or 96: the only lengths RFC 6052 defines.
    package let length: Int

    /// The lengths RFC 6052 defines, longest first (the order RFC 7050 §3 tries them in).
    package static let lengths = [96, 64, 56, 48, 40, 32]
    /// RFC 6052's well-known prefix.
    package static let wellKnown = NAT64Prefix(IPAddress("64:ff9b::")!, length: 96)!
    /// The IPv4 addresses `ipv4only.arpa` has (RFC 7050 §2.2): a DNS64 answer
    /// synthesised from either locates the network's prefix.
    package static let wellKnownIPv4 = [IPAddress("192.0.0.170")!, IPAddress("192.0.0.171")!]

    /// nil unless `address` is IPv6 and `length` one of RFC 6052's. Bits past the length are cleared.
    package init?(_ address: IPAddress, length: Int) {
        guard address.family == .v6, Self.lengths.contains(length) else { return nil }
        var bytes = address.bytes
        for index in length / 8..<16 { bytes[index] = 0 }
        self.address = IPAddress(bytes: bytes)!
        self.length = length
    }

    /// Parses "64:ff9b::/96"; nil when bits past the length are set (a typo, not a prefix).
    package init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let address = IPAddress(String(parts[0])), let length = Int(parts[1]),
            let prefix = NAT64Prefix(address, length: length), prefix.address == address
        else { return nil }
        self = prefix
    }

    package var description: String { "\(address)/\(length)" }

    /// Where the four IPv4 octets go (RFC 6052 §2.2): from the end of the prefix on, octet 8 skipped.
    private var positions: [Int] {
        var positions: [Int] = []
        var index = length / 8
        while positions.count < 4 {
            if index != 8 { positions.append(index) }
            index += 1
        }
        return positions
    }

    /// The IPv6 address the NAT64 translates to `ipv4`.
    package func synthesize(_ ipv4: IPAddress) -> IPAddress? {
        guard ipv4.family == .v4 else { return nil }
        var bytes = address.bytes
        for (octet, index) in zip(ipv4.bytes, positions) { bytes[index] = octet }
        return IPAddress(bytes: bytes)
    }

    /// The IPv4 address written into `ipv6`, if `ipv6` lies in this prefix with a zero "u" octet.
    package func extract(_ ipv6: IPAddress) -> IPAddress? {
        guard ipv6.family == .v6, ipv6.bytes.prefix(length / 8) == address.bytes.prefix(length / 8),
            length == 96 || ipv6.bytes[8] == 0
        else { return nil }
        return IPAddress(bytes: positions.map { ipv6.bytes[$0] })
    }

    /// The prefix a DNS64 used to synthesise `answer` for `ipv4only.arpa` (RFC 7050 §3):
    /// the first length, longest first, at which a well-known IPv4 address sits. nil for
    /// an answer that is no synthesis (a real AAAA record, or none of those addresses).
    package static func discovered(from answer: IPAddress) -> NAT64Prefix? {
        for length in lengths {
            guard let prefix = NAT64Prefix(answer, length: length), let embedded = prefix.extract(answer),
                wellKnownIPv4.contains(embedded)
            else { continue }
            return prefix
        }
        return nil
    }
}
