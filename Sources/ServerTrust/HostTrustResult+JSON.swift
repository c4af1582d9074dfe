import FoundationEssentials

extension HostTrustResult: Encodable {
    enum CodingKeys: String, CodingKey {
        case host, port, pattern, verdict, reason, enforced, tlsVersion = "tls-version", presentedPins = "presented-pins", warning, checkedAt = "checked-at", certificateExpires = "certificate-expires"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(port, forKey: .port)
        try container.encode(pattern, forKey: .pattern)
        try container.encode(verdict, forKey: .verdict)
        try container.encode(reason, forKey: .reason)
        try container.encode(enforced, forKey: .enforced)
        try container.encode(tlsVersion?.name, forKey: .tlsVersion)
        try container.encode(presentedPins.map(\.description), forKey: .presentedPins)
        try container.encodeIfPresent(warning, forKey: .warning)
        try container.encode(checkedAt.formatted(.iso8601), forKey: .checkedAt)
        try container.encodeIfPresent(certificateExpires?.formatted(.iso8601), forKey: .certificateExpires)
    }
}
