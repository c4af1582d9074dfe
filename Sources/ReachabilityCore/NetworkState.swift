import Netlink

/// What the monitor keeps of the kernel's state: links and addresses, both
/// small. Routes are never kept; the kernel is asked instead.
package struct NetworkState: Sendable, Equatable {
    package private(set) var links: [Int32: Link] = [:]
    /// Addresses by interface, each interface's in document order (IPv4 first).
    private var addressesByInterface: [Int32: [InterfaceAddress]] = [:]
    /// Goes up with every change of links or addresses, so derived values can be kept until then.
    package private(set) var generation = 0

    package init(links: [Link] = [], addresses: [InterfaceAddress] = []) {
        replace(links: links, addresses: addresses)
    }

    /// Replaces everything with a fresh dump.
    package mutating func replace(links: [Link], addresses: [InterfaceAddress]) {
        self.links = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        addressesByInterface = [:]
        for address in addresses { insert(address) }
        generation += 1
    }

    /// Applies one event. Returns false when it changed nothing the path depends on
    /// (route and rule events always may: the FIB answers differently).
    @discardableResult
    package mutating func apply(_ message: RtnetlinkMessage) -> Bool {
        switch message {
        case let .link(link):
            guard links.updateValue(link, forKey: link.index) != link else { return false }
        case let .linkRemoved(index):
            addressesByInterface[index] = nil
            guard links.removeValue(forKey: index) != nil else { return false }
        case let .address(address):
            guard insert(address) else { return false }
        case let .addressRemoved(address):
            guard let index = addressesByInterface[address.interfaceIndex]?.firstIndex(where: { $0.key == address.key }) else {
                return false
            }
            addressesByInterface[address.interfaceIndex]!.remove(at: index)
        case .route, .rule:
            return true
        }
        generation += 1
        return true
    }

    /// Adds or replaces an address; false when it was already there as it is.
    @discardableResult
    private mutating func insert(_ address: InterfaceAddress) -> Bool {
        var list = addressesByInterface[address.interfaceIndex] ?? []
        if let index = list.firstIndex(where: { $0.key == address.key }) {
            guard list[index] != address else { return false }
            list[index] = address
        } else {
            let position = list.firstIndex { Self.precedes(address, $0) } ?? list.endIndex
            list.insert(address, at: position)
        }
        addressesByInterface[address.interfaceIndex] = list
        return true
    }

    private static func precedes(_ lhs: InterfaceAddress, _ rhs: InterfaceAddress) -> Bool {
        if lhs.address.family != rhs.address.family { return lhs.address.family == .v4 }
        if lhs.address.bytes != rhs.address.bytes { return lhs.address.bytes.lexicographicallyPrecedes(rhs.address.bytes) }
        return lhs.prefixLength < rhs.prefixLength
    }

    /// The addresses of one interface, IPv4 first, in a stable order.
    package func addresses(of index: Int32) -> [InterfaceAddress] {
        addressesByInterface[index] ?? []
    }

    /// The interfaces enslaved to a bridge or bond.
    package func members(of index: Int32) -> [Link] {
        links.values.filter { $0.masterIndex == index }
    }
}
