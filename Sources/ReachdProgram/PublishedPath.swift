import ReachabilityBus
import ReachabilityCore
import SDBus

/// How a published path appears outside the document: the bus object's properties
/// (docs/api.md); the one-line summary the log and `systemctl status` show is its `description`.
extension Path {
    var busProperties: ReachabilityObject.Properties {
        var properties = ReachabilityObject.Properties()
        properties.status = status.rawValue
        properties.reason = reason?.rawValue ?? ""
        properties.interface = interface?.name ?? ""
        properties.interfaceKind = interface?.kind.rawValue ?? ""
        properties.expensive = expensive
        properties.ipv4 = ipv4
        properties.ipv6 = ipv6
        properties.vpn = vpn?.name ?? ""
        properties.trust = trust.rawValue
        properties.connectivity = connectivity.rawValue
        properties.portalURL = portal ?? ""
        properties.supportsDNS = supportsDNS ?? false
        properties.dnsServers = dns?.usable ?? []
        properties.ipv4Via = ipv4Via.rawValue
        properties.clat = clat?.name ?? ""
        properties.nat64Prefix = nat64?.prefix ?? ""
        properties.nat64Source = nat64?.source.rawValue ?? ""
        properties.betterWayOut = betterWayOut ?? ""
        if let capport {
            properties.captivePortalAPI = capport.api
            properties.captivePortalSource = capport.source.rawValue
            properties.captivePortalStatus = capport.captive.map { $0 ? "captive" : "not-captive" } ?? "unknown"
            properties.venueInfoURL = capport.venueInfoURL ?? ""
            properties.sessionExpires = capport.expires.map { UInt64(max(0, $0.timeIntervalSince1970)) } ?? 0
            properties.bytesRemaining = capport.bytesRemaining ?? -1
            properties.canExtendSession = capport.canExtendSession ?? false
        }
        return properties
    }
}
