import CNetlink
import IPAddresses
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// One option of an IPv6 router advertisement that the kernel does not act on
/// itself and passes to userspace (`RTM_NEWNDUSEROPT` on `RTNLGRP_ND_USEROPT`,
/// `struct nduseroptmsg`): RDNSS, DNSSL, the captive-portal URI (RFC 8910) and
/// PREF64. The kernel sends them only where it processes router advertisements
/// itself (`accept_ra` 1 without forwarding, or 2).
package struct RouterAdvertisementOption: Hashable, Sendable {
    /// The interface the advertisement arrived on.
    package var interfaceIndex: Int32
    /// The router that sent it (`NDUSEROPT_SRCADDR`: its link-local address).
    package var router: IPAddress?
    /// The option's type: 37 for a captive-portal URI, 38 for PREF64.
    package var type: UInt8
    /// The option's body, after its type and length.
    package var body: [UInt8]

    package init(interfaceIndex: Int32, router: IPAddress?, type: UInt8, body: [UInt8]) {
        self.interfaceIndex = interfaceIndex
        self.router = router
        self.type = type
        self.body = body
    }

    /// RFC 8910's captive-portal option.
    package static let captivePortalType: UInt8 = 37

    /// The captive-portal URI this option carries (RFC 8910 §2.3: the URI, padded
    /// with NULs to a multiple of 8 octets); nil for another option or an empty URI.
    /// The text is returned as sent: whether it is a URI reachd uses is judged above.
    package var captivePortalURI: String? {
        guard type == Self.captivePortalType else { return nil }
        let text = body.prefix { $0 != 0 }
        return text.isEmpty ? nil : String(decoding: text, as: UTF8.self)
    }

    /// RFC 8781's PREF64 option: the network's NAT64 prefix.
    package static let pref64Type: UInt8 = 38

    /// The NAT64 prefix this option carries and for how long it holds (0 s: withdrawn).
    /// nil for another option, a body of the wrong size, or a prefix length code RFC 8781
    /// does not define (such an option is ignored, as §4 asks).
    package var pref64: (prefix: NAT64Prefix, lifetime: Duration)? {
        // Two octets of scaled lifetime (13 bits, in units of 8 s) and prefix length code (3 bits), then 96 bits of prefix.
        guard type == Self.pref64Type, body.count == 14 else { return nil }
        let field = Int(body[0]) << 8 | Int(body[1])
        // The codes 0–5 stand for 96, 64, 56, 48, 40 and 32 bits: RFC 6052's lengths, longest first.
        guard field & 7 < NAT64Prefix.lengths.count,
            let prefix = NAT64Prefix(
                IPAddress(bytes: Array(body[2..<14]) + [0, 0, 0, 0])!,
                length: NAT64Prefix.lengths[field & 7])
        else { return nil }
        return (prefix, .seconds((field >> 3) * 8))
    }

    /// Reads `struct nduseroptmsg` (16 bytes: family, pad, options length, interface
    /// index, ICMPv6 type and code, padding), the option it carries and its attributes.
    init?(_ header: UnsafeMutablePointer<nlmsghdr>) {
        let fixed = 16
        let payloadLength = Int(header.pointee.nlmsg_len) - Int(nlmsg_size(0))
        guard payloadLength >= fixed else { return nil }
        let payload = UnsafeRawBufferPointer(start: nlmsg_data(header), count: payloadLength)
        let length = Int(payload.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        // Only router advertisements (ICMPv6 134) of IPv6, with one whole option: type, length in 8-octet units.
        guard payload[0] == UInt8(AF_INET6), payload[8] == 134, length >= 8, fixed + length <= payloadLength,
            Int(payload[fixed + 1]) * 8 == length
        else { return nil }
        var router: IPAddress?
        // The attributes follow the option.
        header.forEachAttribute(headerSize: fixed + length) { attribute in
            if attribute.type == 1, nla_len(attribute) == 16 { router = IPAddress(bytes: attribute.bytes) } // NDUSEROPT_SRCADDR
        }
        self.init(
            interfaceIndex: payload.loadUnaligned(fromByteOffset: 4, as: Int32.self), router: router,
            type: payload[fixed], body: Array(payload[(fixed + 2)..<(fixed + length)]))
    }
}
