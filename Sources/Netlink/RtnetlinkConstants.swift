// rtnetlink numbers from <linux/rtnetlink.h>. The header declares them in
// C enums that import awkwardly; these are the kernel ABI and never change.

enum MessageType {
    static let noop: UInt16 = 1
    static let error: UInt16 = 2
    static let done: UInt16 = 3
    static let overrun: UInt16 = 4
    static let newLink: UInt16 = 16
    static let deleteLink: UInt16 = 17
    static let getLink: UInt16 = 18
    static let newAddress: UInt16 = 20
    static let deleteAddress: UInt16 = 21
    static let getAddress: UInt16 = 22
    static let newRoute: UInt16 = 24
    static let deleteRoute: UInt16 = 25
    static let getRoute: UInt16 = 26
    static let newRule: UInt16 = 32
    static let deleteRule: UInt16 = 33
    static let newNextHop: UInt16 = 104
    static let deleteNextHop: UInt16 = 105
    static let newNDUserOption: UInt16 = 68
}

enum MessageFlags {
    static let request: Int32 = 0x1
    static let multi: UInt16 = 0x2
    static let dumpInterrupted: UInt16 = 0x10
    static let dump: Int32 = 0x300
}

enum MulticastGroup {
    static let link: Int32 = 1
    static let ipv4Address: Int32 = 5
    static let ipv4Route: Int32 = 7
    static let ipv4Rule: Int32 = 8
    static let ipv6Address: Int32 = 9
    static let ipv6Route: Int32 = 11
    static let ipv6Rule: Int32 = 19
    static let ndUserOption: Int32 = 20
    static let nextHop: Int32 = 32
}

enum RouteAttribute {
    static let destination: UInt16 = 1
    static let outputInterface: UInt16 = 4
    static let gateway: UInt16 = 5
    static let priority: UInt16 = 6
    static let preferredSource: UInt16 = 7
    static let multipath: UInt16 = 9
    static let table: UInt16 = 15
    static let via: UInt16 = 18
    static let nextHopObject: UInt16 = 30
}

/// `IFLA_*`, and `IFLA_INFO_KIND` nested in `IFLA_LINKINFO`.
enum LinkAttribute {
    static let name: UInt16 = 3
    static let mtu: UInt16 = 4
    static let link: UInt16 = 5
    static let master: UInt16 = 10
    static let operationalState: UInt16 = 16
    static let linkInfo: UInt16 = 18
    static let infoKind: UInt16 = 1
    static let extendedMask: Int32 = 29
    /// RTEXT_FILTER_SKIP_STATS: dumps without the per-link counters.
    static let skipStatistics: UInt32 = 1 << 3
}

/// `IFA_*`.
enum AddressAttribute {
    static let address: UInt16 = 1
    static let local: UInt16 = 2
    static let flags: UInt16 = 8
}

/// `RTM_F_FIB_MATCH`: answer with the FIB entry that matched, not the resolved dst.
let fibMatchFlag: UInt32 = 0x2000

/// `RTN_*` route types.
package enum RouteType {
    package static let unicast: UInt8 = 1
    package static let local: UInt8 = 2
    package static let broadcast: UInt8 = 3
    package static let anycast: UInt8 = 4
    package static let multicast: UInt8 = 5
    package static let blackhole: UInt8 = 6
    package static let unreachable: UInt8 = 7
    package static let prohibit: UInt8 = 8
    package static let throwRoute: UInt8 = 9
}
