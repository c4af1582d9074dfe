/// NWPath's questions, answered from the document (docs/path.md, "Asking the path").
extension Path {
    /// Whether the path leaves by `type` (NWPath's `usesInterfaceType`). Under a VPN
    /// it is the medium the tunnel rides on: a tunnel over Wi-Fi uses `.wifi`.
    public func uses(_ type: InterfaceType) -> Bool {
        InterfaceType(status) == type
    }

    /// Whether the path goes through a tunnel (NWPath's `usesInterfaceType(.other)` for utun).
    public var usesVPN: Bool { vpn != nil }

    /// Every next hop of the path, IPv4 first, without repeats (NWPath's `gateways`):
    /// one per family the kernel routes through a gateway, from ``routes``.
    public var gateways: [String] {
        var seen: [String] = []
        let ordered = routes.filter { !$0.destination.contains(":") } + routes.filter { $0.destination.contains(":") }
        for route in ordered where route.status.isReachable {
            if let gateway = route.gateway, !seen.contains(gateway) { seen.append(gateway) }
        }
        return seen
    }

    /// The interfaces that could carry a path, in order of preference (NWPath's
    /// `availableInterfaces`): where reachd judged every way out, the best verdict first
    /// (docs/connectivity.md, "Every way out"); then the kernel's preference — the tunnel
    /// the path goes through, the interface that carries it, then wired, Wi-Fi, cellular
    /// and tunnels, each by index. ``interfaces`` holds the same entries in index order.
    public var availableInterfaces: [InterfaceState] {
        interfaces.enumerated().sorted { preference($0) < preference($1) }.map(\.element)
    }

    /// Where the entry at `offset` of ``interfaces`` stands in ``availableInterfaces``: lowest first.
    private func preference(_ entry: (offset: Int, element: InterfaceState)) -> (verdict: Int, rank: Int, offset: Int) {
        func rank(_ entry: InterfaceState) -> Int {
            if entry.index == vpn?.index { return 0 }
            if entry.index == interface?.index { return 1 }
            switch entry.kind.interfaceType {
            case .wired?: return 2
            case .wifi?: return 3
            case .cellular?: return 4
            case nil: return 5
            }
        }
        return (-(connectivity(of: entry.element)?.rank ?? 0), rank(entry.element), entry.offset)
    }

    /// An available interface's verdict: the path's `connectivity` for the interface that
    /// carries the path (and its tunnel), the interface's own elsewhere (nil: not judged).
    public func connectivity(of entry: InterfaceState) -> Connectivity? {
        entry.index == interface?.index || entry.index == vpn?.index ? connectivity : entry.connectivity
    }

    /// Another interface whose own verdict is better than the path's connectivity, when the
    /// path's is known and not `full` (a portal, a dead probe, no answer): the best such, in
    /// the order of ``availableInterfaces``. The document's `better-way-out`: reachd judges,
    /// the kernel (or whoever manages routes) decides.
    public var betterWayOut: String? {
        guard [.none, .limited, .portal].contains(connectivity) else { return nil }
        // The first such in the order of availableInterfaces, without sorting them all: a
        // document is written on every change, and this is asked on every one with no Internet.
        return interfaces.enumerated().lazy.filter { entry in
            entry.element.index != interface?.index && entry.element.index != vpn?.index
                && (entry.element.connectivity?.rank ?? 0) > connectivity.rank
        }.min { preference($0) < preference($1) }?.element.name
    }
}

extension InterfaceKind {
    /// The medium an interface of this kind is on its own: nil for tunnels, whose medium
    /// is the path they ride on. A bridge or bond counts as wired here (the path
    /// itself takes its members' medium).
    public var interfaceType: InterfaceType? {
        switch self {
        case .wifi: .wifi
        case .cellular: .cellular
        case .tunnel, .wireguard: nil
        default: .wired
        }
    }
}
