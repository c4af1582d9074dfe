/// What the connectivity probe saw when it judged the network a captive portal:
/// the evidence a pin-failure report seen behind it carries (`"captive-portal"`).
public struct CaptivePortalEvidence: Codable, Sendable, Equatable {
    /// The probe's HTTP status (302 for a redirect), when it got an HTTP answer.
    public var httpStatus: Int?
    /// The redirect's target (`Location`), when there was one.
    public var location: String?

    /// The probe's answer.
    public init(httpStatus: Int?, location: String?) {
        self.httpStatus = httpStatus
        self.location = location
    }

    enum CodingKeys: String, CodingKey {
        case httpStatus = "http-status", location
    }
}
