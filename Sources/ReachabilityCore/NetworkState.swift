import IPAddresses
import Netlink

/// What the monitor keeps of the kernel's state: links and addresses, both
/// small. Routes are never kept; the kernel is asked instead.
package struct NetworkState: Sendable, Equatable {
    package private(set) var links: [Int32: Link] = [:]
    /// Addresses by interface, each interface's in document order (IPv4 first).
    private var addressesByInterface: [Int32: [InterfaceAddress]] = [:]
    /// Bridge and bond ports by their master: a bridge with a thousand pod veths is
    /// asked for its ports without a walk over every link.
    private var portsByMaster: [Int32: Set<Int32>] = [:]
    /// Goes up with every change of links or addresses, so derived values can be kept until then.
    package private(set) var generation = 0

    package init(links: [Link] = [], addresses: [InterfaceAddress] = []) {
        replace(links: links, addresses: addresses)
    }

    /// Replaces everything with a fresh dump.
    package mutating func replace(links: [Link], addresses: [InterfaceAddress]) {
        self.links = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        portsByMaster = [:]
        for link in self.links.values { if let master = link.masterIndex { portsByMaster[master, default: []].insert(link.index) } }
        addressesByInterface = [:]
        for address in addresses { insert(address) }
        generation += 1
    }

    /// What one event changed.
    package enum Effect: Equatable, Sendable {
        /// Nothing: the kernel repeated what the state already holds.
        case none
        /// One interface's link or addresses.
        case interface(Int32)
        /// A route, or (nil) a rule or a next hop, which may move any answer: the FIB may answer differently.
        case routing(RouteChange?)
    }

    /// Applies one event, in time independent of how many interfaces there are.
    @discardableResult
    package mutating func apply(_ message: RtnetlinkMessage) -> Effect {
        let index: Int32
        switch message {
        case let .link(link):
            let before = links.updateValue(link, forKey: link.index)
            guard before != link else { return .none }
            if before?.masterIndex != link.masterIndex {
                if let old = before?.masterIndex { removePort(link.index, of: old) }
                if let new = link.masterIndex { portsByMaster[new, default: []].insert(link.index) }
            }
            index = link.index
        case let .linkRemoved(removed):
            addressesByInterface[removed] = nil
            guard let before = links.removeValue(forKey: removed) else { return .none }
            if let master = before.masterIndex { removePort(removed, of: master) }
            index = removed
        case let .address(address):
            guard insert(address) else { return .none }
            index = address.interfaceIndex
        case let .addressRemoved(address):
            guard let position = addressesByInterface[address.interfaceIndex]?.firstIndex(where: { $0.key == address.key }) else {
                return .none
            }
            addressesByInterface[address.interfaceIndex]!.remove(at: position)
            if addressesByInterface[address.interfaceIndex]!.isEmpty { addressesByInterface[address.interfaceIndex] = nil }
            index = address.interfaceIndex
        case let .route(change):
            return .routing(change)
        case .rule, .nextHop:
            return .routing(nil)
        case .routerOption:
            return .none
        }
        generation += 1
        return .interface(index)
    }

    private mutating func removePort(_ port: Int32, of master: Int32) {
        portsByMaster[master]?.remove(port)
        if portsByMaster[master]?.isEmpty == true { portsByMaster[master] = nil }
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

    /// Whether an interface holds an address that can reach beyond the link (of `family`, if given).
    func hasAddressForGlobalTraffic(on index: Int32, family: IPAddress.Family? = nil) -> Bool {
        addresses(of: index).contains { $0.isUsableForGlobalTraffic && (family == nil || $0.address.family == family) }
    }

    /// The interfaces enslaved to a bridge or bond.
    package func members(of index: Int32) -> [Link] {
        (portsByMaster[index] ?? []).compactMap { links[$0] }
    }
}
