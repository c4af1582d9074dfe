import FoundationEssentials

extension HostTrustResult: Encodable {
    /// As `TrustStatus()` lists it (docs/api.md).
    public var status: TrustStatus.Host {
        TrustStatus.Host(
            host: host, port: port, pattern: pattern, verdict: verdict, reason: reason, enforced: enforced,
            tlsVersion: tlsVersion?.name, presentedPins: presentedPins.map(\.description), warning: warning,
            checkedAt: checkedAt, certificateExpires: certificateExpires)
    }

    /// The host's entry of the TrustStatus document.
    public func encode(to encoder: any Encoder) throws { try status.encode(to: encoder) }
}
