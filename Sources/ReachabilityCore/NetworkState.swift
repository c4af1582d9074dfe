import Netlink

/// What the monitor keeps of the kernel's state: links and addresses, both
/// small. Routes are never kept; the kernel is asked instead.
package struct NetworkState: Sendable, Equatable {
    package private(set) var links: [Int32: Link] = [:]
    package private(set) var addresses: [InterfaceAddress.Key: InterfaceAddress] = [:]

    package init(links: [Link] = [], addresses: [InterfaceAddress] = []) {
        replace(links: links, addresses: addresses)
    }

    /// Replaces everything with a fresh dump.
    package mutating func replace(links: [Link], addresses: [InterfaceAddress]) {
        self.links = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        self.addresses = Dictionary(addresses.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Applies one event. Returns false when it changed nothing the path depends on
    /// (route and rule events always may: the FIB answers differently).
    @discardableResult
    package mutating func apply(_ message: RtnetlinkMessage) -> Bool {
        switch message {
        case let .link(link):
            return links.updateValue(link, forKey: link.index) != link
        case let .linkRemoved(index):
            addresses = addresses.filter { $0.key.interfaceIndex != index }
            return links.removeValue(forKey: index) != nil
        case let .address(address):
            return addresses.updateValue(address, forKey: address.key) != address
        case let .addressRemoved(address):
            return addresses.removeValue(forKey: address.key) != nil
        case .route, .rule:
            return true
        }
    }

    /// The addresses of one interface, IPv4 first, in a stable order.
    package func addresses(of index: Int32) -> [InterfaceAddress] {
        addresses.values.filter { $0.interfaceIndex == index }.sorted { lhs, rhs in
            if lhs.address.family != rhs.address.family { return lhs.address.family == .v4 }
            if lhs.address.bytes != rhs.address.bytes {
                return lhs.address.bytes.lexicographicallyPrecedes(rhs.address.bytes)
            }
            return lhs.prefixLength < rhs.prefixLength
        }
    }

    /// The interfaces enslaved to a bridge or bond.
    package func members(of index: Int32) -> [Link] {
        links.values.filter { $0.masterIndex == index }
    }
}
