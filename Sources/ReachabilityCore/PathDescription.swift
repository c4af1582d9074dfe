/// How a path and its words print: as the path document, `reachctl` and the bus spell
/// them (`no-route`, not `noRoute`), so that `print(path.reason!)` and a log line
/// read the same as `reachctl status`.
extension Path: CustomStringConvertible {
    /// One line: "wifi dev wlan0", "unreachable (no-route)", "wired dev eth0 vpn wg0",
    /// "wired dev eth0 clat clat0" — what reachd logs and `systemctl status` shows.
    /// The whole document is ``jsonString()``.
    public var description: String {
        var text = status.rawValue
        if let reason { text += " (\(reason.rawValue))" }
        if let interface { text += " dev \(interface.name)" }
        if let vpn { text += " vpn \(vpn.name)" }
        if let clat { text += " clat \(clat.name)" }
        return text
    }
}

extension ReachabilityStatus: CustomStringConvertible {
    /// The document's word: `wifi`, `unreachable`.
    public var description: String { rawValue }
}

extension UnreachableReason: CustomStringConvertible {
    /// The document's word: `no-route`, `link-down`.
    public var description: String { rawValue }
}

extension Connectivity: CustomStringConvertible {
    /// The document's word: `full`, `portal`.
    public var description: String { rawValue }
}

extension PathSource: CustomStringConvertible {
    /// The document's word: `direct`, `daemon`.
    public var description: String { rawValue }
}

extension InterfaceKind: CustomStringConvertible {
    /// The document's word: `ethernet`, `wifi`.
    public var description: String { rawValue }
}

extension InterfaceType: CustomStringConvertible {
    /// The document's word: `wifi`, `wired`, `cellular`.
    public var description: String { rawValue }
}

extension Path.IPv4Via: CustomStringConvertible {
    /// The document's word: `native`, `clat`.
    public var description: String { rawValue }
}

extension Path.NAT64.Source: CustomStringConvertible {
    /// The document's word: `router-advertisement`, `dns64`.
    public var description: String { rawValue }
}
