import CNetlink
import IPAddresses
import SystemCalls

/// `IFA_F_*` flags of an address.
package struct AddressFlags: OptionSet, Hashable, Sendable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    package static let secondary = AddressFlags(rawValue: 0x01)
    package static let optimistic = AddressFlags(rawValue: 0x04)
    package static let dadFailed = AddressFlags(rawValue: 0x08)
    package static let deprecated = AddressFlags(rawValue: 0x20)
    package static let tentative = AddressFlags(rawValue: 0x40)
    package static let permanent = AddressFlags(rawValue: 0x80)
}

/// `RT_SCOPE_*` of an address.
package enum AddressScope {
    package static let universe: UInt8 = 0
    package static let site: UInt8 = 200
    package static let link: UInt8 = 253
    package static let host: UInt8 = 254
    package static let nowhere: UInt8 = 255
}

/// An address assigned to an interface.
package struct InterfaceAddress: Hashable, Sendable {
    package let interfaceIndex: Int32
    package let address: IPAddress
    package let prefixLength: UInt8
    package let scope: UInt8
    package let flags: AddressFlags
    /// "192.0.2.10/24". Formatted when asked: the addresses of a pod's veth are
    /// kept, but listed only if someone asks for that interface.
    package var cidr: String { "\(address)/\(prefixLength)" }

    package init(
        interfaceIndex: Int32, address: IPAddress, prefixLength: UInt8,
        scope: UInt8 = AddressScope.universe, flags: AddressFlags = [.permanent]
    ) {
        self.interfaceIndex = interfaceIndex
        self.address = address
        self.prefixLength = prefixLength
        self.scope = scope
        self.flags = flags
    }

    /// What the kernel uses to tell one address of an interface from another.
    package struct Key: Hashable, Sendable {
        package var interfaceIndex: Int32
        package var address: IPAddress
        package var prefixLength: UInt8
    }

    package var key: Key { Key(interfaceIndex: interfaceIndex, address: address, prefixLength: prefixLength) }

    /// The address can source new connections beyond the link: not host-scoped,
    /// not a failed or still-tentative IPv6 address, and (IPv6) not link-local.
    package var isUsableForGlobalTraffic: Bool {
        guard hasSettled else { return false }
        switch address.family {
        case .v4: return scope != AddressScope.host && scope != AddressScope.nowhere
        case .v6: return scope == AddressScope.universe || scope == AddressScope.site
        }
    }

    /// Duplicate address detection is over (or was never needed). The kernel lists
    /// tentative IPv6 addresses in dumps but announces them only when DAD ends,
    /// so a tentative address is known or not depending on when one looked.
    package var hasSettled: Bool {
        !flags.contains(.dadFailed) && (!flags.contains(.tentative) || flags.contains(.optimistic))
    }

    /// Reads an `RTM_NEWADDR`/`RTM_DELADDR` message: the fixed `ifaddrmsg`, then the address —
    /// `IFA_LOCAL`, which a point-to-point link's `IFA_ADDRESS` (its peer's) must not replace —
    /// and the flags, whose full 32 bits only `IFA_FLAGS` holds. nil without an address.
    init?(_ header: UnsafeMutablePointer<nlmsghdr>) {
        guard let info = header.payload(as: ifaddrmsg.self) else { return nil }
        var local: UnsafeMutablePointer<nlattr>?
        var address: UnsafeMutablePointer<nlattr>?
        var flags = UInt32(info.ifa_flags)
        header.forEachAttribute(headerSize: MemoryLayout<ifaddrmsg>.size) { attribute in
            switch attribute.type {
            case AddressAttribute.local: local = attribute
            case AddressAttribute.address: address = attribute
            case AddressAttribute.flags where nla_len(attribute) >= 4: flags = attribute.u32
            default: break
            }
        }
        // IPv4 sends both, the same address: only the one kept is read.
        guard let chosen = local ?? address, let address = IPAddress(bytes: chosen.bytes) else { return nil }
        self.init(
            interfaceIndex: Int32(bitPattern: info.ifa_index), address: address, prefixLength: info.ifa_prefixlen,
            scope: info.ifa_scope, flags: AddressFlags(rawValue: flags))
    }
}
