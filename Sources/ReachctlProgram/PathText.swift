import FoundationEssentials
import ReachabilityCore

/// Human-readable renderings of a path.
enum PathText {
    /// `reachctl status`: one field per line.
    static func status(_ path: Path) -> String {
        var lines = [field("status", statusText(path))]
        if let interface = path.interface {
            lines.append(field("interface", "\(interface.name) (\(interface.kind.rawValue))"))
        }
        if let gateway = path.gateway { lines.append(field("gateway", gateway)) }
        if let vpn = path.vpn { lines.append(field("vpn", "\(vpn.name) (\(vpn.kind.rawValue))")) }
        lines.append(field("ipv4", ipv4Text(path)))
        lines.append(field("ipv6", path.ipv6 ? "yes" : "no"))
        if let nat64 = path.nat64 { lines.append(field("nat64", nat64Text(nat64))) }
        lines.append(field("expensive", path.expensive ? "yes" : "no"))
        lines.append(field("connectivity", path.connectivity.rawValue))
        if let portal = path.portal { lines.append(field("portal", portal)) }
        // Where other ways out were judged: each with its verdict, best first.
        if path.interfaces.contains(where: { $0.connectivity != nil }) {
            let judged = path.availableInterfaces.compactMap { entry in path.connectivity(of: entry).map { "\(entry.name) \($0.rawValue)" }
            }
            lines.append(field("ways out", judged.joined(separator: ", ")))
        }
        if let better = path.betterWayOut { lines.append(field("better", "\(better): its own probe does better than the path's")) }
        if let dns = path.dns { lines.append(field("dns", dnsText(dns))) }
        if let capport = path.capport { lines += captivePortalLines(capport).map { field($0.0, $0.1) } }
        lines.append(field("since", UTCTimestamp.format(path.since)))
        lines.append(field("source", path.source.rawValue))
        return lines.joined(separator: "\n")
    }

    /// Whether IPv4 works, and how: the network's own, a CLAT's, or only by name through the NAT64.
    static func ipv4Text(_ path: Path) -> String {
        switch path.ipv4Via {
        case .native: "yes"
        case .clat: "yes (CLAT \(path.clat?.name ?? "-"))"
        case .nat64: "no (IPv4 servers by name only, through NAT64)"
        case .none: "no"
        }
    }

    /// The NAT64 prefix, where it was learnt, and for how long.
    static func nat64Text(_ nat64: Path.NAT64) -> String {
        var details = [nat64.source.rawValue]
        if let interface = nat64.interface { details.append(interface) }
        if let lifetime = nat64.lifetime { details.append("lifetime \(lifetime) s") }
        return "\(nat64.prefix) (\(details.joined(separator: ", ")))"
    }

    /// The resolvers the path can use, and where they were read.
    static func dnsText(_ dns: Path.DNS) -> String {
        let source = "(\(dns.source.rawValue))"
        if dns.servers.isEmpty { return "none configured \(source)" }
        if dns.usable.isEmpty { return "none reachable of \(dns.servers.joined(separator: " ")) \(source)" }
        return "\(dns.usable.joined(separator: " ")) \(source)"
    }

    /// The network's captive-portal API: where it was learnt, and what it answered.
    static func captivePortalLines(_ capport: Path.CaptivePortal, now: Date = Date()) -> [(String, String)] {
        let state: String =
            if let error = capport.error { "unusable: \(error)" } else if let captive = capport.captive {
                captive ? "captive" : "not captive"
            } else { "not answered yet" }
        var details: [String] = []
        if let seconds = capport.secondsRemaining(at: now), let expires = capport.expires {
            details.append("\(seconds) s left (until \(UTCTimestamp.format(expires)))")
        }
        if let bytes = capport.bytesRemaining { details.append("\(bytes) bytes left") }
        if capport.canExtendSession == true { details.append("can extend") }
        var lines = [
            ("capport", ([state] + details).joined(separator: ", ")),
            ("capport-api", "\(capport.api) (\(capport.source.rawValue), \(capport.interface))")
        ]
        if let venue = capport.venueInfoURL { lines.append(("venue", venue)) }
        return lines
    }

    /// `reachctl watch`: one line per path.
    static func line(_ path: Path) -> String {
        var words = [UTCTimestamp.format(path.since), statusText(path)]
        if let interface = path.interface { words.append("dev \(interface.name)") }
        if let gateway = path.gateway { words.append("via \(gateway)") }
        if let vpn = path.vpn { words.append("vpn \(vpn.name)") }
        if let clat = path.clat { words.append("clat \(clat.name)") }
        var families: [String] = []
        if path.ipv4 { families.append("ipv4") }
        if path.ipv6 { families.append("ipv6") }
        if !families.isEmpty { words.append(families.joined(separator: "+")) }
        if path.expensive { words.append("expensive") }
        words.append("connectivity \(path.connectivity.rawValue)")
        if let portal = path.portal { words.append("portal \(portal)") }
        if path.initial { words.append("(initial)") }
        return words.joined(separator: " ")
    }

    /// `reachctl status --interfaces` and `reachctl watch --interfaces`: one interface.
    static func interface(_ change: InterfaceChange) -> String {
        let state = change.interface
        var words = ["\(state.name) (\(state.index), \(state.kind.rawValue))"]
        if change.removed {
            words.append("removed")
        } else {
            words.append(state.operstate)
            if state.up { words.append("up") }
            if state.carrier { words.append("carrier") }
            if let master = change.master { words.append("master \(master)") }
            words += state.addresses
            if change.available { words.append("available") }
        }
        if change.initial { words.append("(initial)") }
        return words.joined(separator: " ")
    }

    /// `reachctl route`: the verdict, then the kernel's answer per address.
    static func route(_ path: Path) -> String {
        var lines = [field("destination", path.destination ?? "-"), field("status", statusText(path))]
        if let vpn = path.vpn { lines.append(field("vpn", vpn.name)) }
        if let clat = path.clat { lines.append(field("clat", clat.name)) }
        if let nat64 = path.nat64 { lines.append(field("nat64", nat64Text(nat64))) }
        for route in path.routes {
            var words = [route.destination, route.reason.map { "unreachable (\($0.rawValue))" } ?? route.status.rawValue]
            if let interface = route.interface { words.append("dev \(interface)") }
            if let gateway = route.gateway { words.append("via \(gateway)") }
            if let source = route.source { words.append("src \(source)") }
            if let synthesized = route.nat64 { words.append("through NAT64 as \(synthesized)") }
            lines.append("  " + words.joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    private static func statusText(_ path: Path) -> String {
        guard let reason = path.reason else { return path.status.rawValue }
        return "\(path.status.rawValue) (\(reason.rawValue))"
    }

    private static func field(_ name: String, _ value: String) -> String {
        let label = name + ":"
        return label + String(repeating: " ", count: max(1, 14 - label.count)) + value
    }
}
