/// What was known of a captive portal when a round judged the network one: the
/// evidence a pin-failure report seen behind it carries (`"captive-portal"`).
public struct CaptivePortalEvidence: Codable, Sendable, Equatable {
    /// Whose word the portal is on.
    public enum Kind: String, Codable, Sendable {
        /// The network's own captive-portal API (RFC 8908) answered `captive: true`.
        case announced
        /// The connectivity probe was redirected or answered otherwise, and the network announced nothing.
        case redirect
        /// The probe was redirected, but the network's API said it is not captive: the
        /// redirect is not the network's portal, and failures are judged as attacks.
        case contradicted
    }

    /// Whose word it is.
    public var kind: Kind
    /// The probe's HTTP status (302 for a redirect), when it got an HTTP answer.
    public var httpStatus: Int?
    /// The redirect's target (`Location`), when there was one.
    public var location: String?
    /// The network's captive-portal API, when one is known.
    public var api: String?
    /// The page the API sends the user to, when it announced the portal.
    public var userPortalURL: String?

    /// The evidence of a portal.
    public init(kind: Kind = .redirect, httpStatus: Int?, location: String?, api: String? = nil, userPortalURL: String? = nil) {
        self.kind = kind
        self.httpStatus = httpStatus
        self.location = location
        self.api = api
        self.userPortalURL = userPortalURL
    }

    /// Whether failures are judged `portal` on this evidence: not when the network's own API contradicts it.
    public var isCredible: Bool { kind != .contradicted }

    enum CodingKeys: String, CodingKey {
        case kind = "evidence", httpStatus = "http-status", location, api, userPortalURL = "user-portal-url"
    }

    /// Reads the evidence of a report; one spooled before the kind was written is the probe's (`redirect`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Reports spooled before the API was read carry no kind: they were the probe's.
        kind = try container.decodeIfPresent(Kind.self, forKey: .kind) ?? .redirect
        httpStatus = try container.decodeIfPresent(Int.self, forKey: .httpStatus)
        location = try container.decodeIfPresent(String.self, forKey: .location)
        api = try container.decodeIfPresent(String.self, forKey: .api)
        userPortalURL = try container.decodeIfPresent(String.self, forKey: .userPortalURL)
    }
}
