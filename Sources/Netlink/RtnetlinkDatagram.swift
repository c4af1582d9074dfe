import CNetlink
import IPAddresses
import SystemCalls

/// A datagram read from an rtnetlink socket, decoded as the monitor decodes
/// one: every message (events and dump answers), and each as the answer to a
/// route lookup. The same code the socket readers run, reachable from bytes
/// alone (the fuzzer's way into the kernel-message parsers).
package enum RtnetlinkDatagram {
    package static func decode(_ bytes: [UInt8]) -> (messages: [RtnetlinkMessage], lookups: [RouteLookup]) {
        // Copied into an aligned buffer of exactly its size, as recv(2) leaves it.
        let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
        defer { datagram.deallocate() }
        datagram.copyBytes(from: bytes)
        var messages: [RtnetlinkMessage] = []
        var lookups: [RouteLookup] = []
        NetlinkSocket.forEachMessage(in: datagram) { header in
            if let message = RtnetlinkMessage(header) { messages.append(message) }
            if header.pointee.nlmsg_type == MessageType.newRoute,
                let lookup = RouteLookup(header, destination: IPAddress("192.0.2.1")!, requestedInterface: 2)
            {
                lookups.append(lookup)
            }
        }
        return (messages, lookups)
    }
}
