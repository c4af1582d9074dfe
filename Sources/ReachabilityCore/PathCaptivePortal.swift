import FoundationEssentials

extension Path {
    /// The network's own word on its captive portal (RFC 8910 discovery, the RFC 8908
    /// API): the document's `capport` (docs/connectivity.md, "When the network says it is
    /// a captive portal"). Only reachd fills it in: the API is HTTPS, and TLS runs in
    /// reachd-trust.
    public struct CaptivePortal: Codable, Sendable, Equatable {
        /// Where the API's URI was learnt.
        public enum Source: String, Codable, Sendable, CaseIterable {
            /// IPv6 router advertisement option 37 (RFC 8910), as the kernel passes it on.
            case routerAdvertisement = "router-advertisement"
            /// systemd-networkd's link state (`CAPTIVE_PORTAL=`: DHCPv4 option 114, DHCPv6 option 103, RA option 37).
            case networkd
            /// `[connectivity] capport` in reachd.toml.
            case config
        }

        /// The API's URI (https).
        public var api: String
        /// Where it was learnt.
        public var source: Source
        /// The interface it was learnt on (the one the API is queried through).
        public var interface: String
        /// The API's answer: nil until it answers, or when its answer was refused (`error`).
        public var captive: Bool?
        /// The portal's page for the user.
        public var userPortalURL: String?
        /// Information about the venue.
        public var venueInfoURL: String?
        /// When the session ends, as the API counted it (`seconds-remaining` after its answer).
        public var expires: Date?
        /// Bytes left in the session.
        public var bytesRemaining: Int64?
        /// Whether the user can extend the session at the portal.
        public var canExtendSession: Bool?
        /// Why the last answer was not used: the connection, TLS, HTTP, or a malformed document.
        public var error: String?

        /// A captive-portal state as reachd publishes it.
        public init(
            api: String, source: Source, interface: String, captive: Bool? = nil, userPortalURL: String? = nil,
            venueInfoURL: String? = nil, expires: Date? = nil, bytesRemaining: Int64? = nil,
            canExtendSession: Bool? = nil, error: String? = nil
        ) {
            self.api = api
            self.source = source
            self.interface = interface
            self.captive = captive
            self.userPortalURL = userPortalURL
            self.venueInfoURL = venueInfoURL
            self.expires = expires
            self.bytesRemaining = bytesRemaining
            self.canExtendSession = canExtendSession
            self.error = error
        }

        /// Whole seconds left in the session at `now` (0 once it has ended); nil without an expiry.
        public func secondsRemaining(at now: Date = Date()) -> Int64? {
            expires.map { max(0, Int64(($0.timeIntervalSince1970 - now.timeIntervalSince1970).rounded(.down))) }
        }

        enum CodingKeys: String, CodingKey {
            case api, source, interface, captive, userPortalURL = "user-portal-url", venueInfoURL = "venue-info-url", expires,
                bytesRemaining = "bytes-remaining", canExtendSession = "can-extend-session", error
        }

        /// Reads the document's `capport` object.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            api = try container.decode(String.self, forKey: .api)
            source = try container.decode(Source.self, forKey: .source)
            interface = try container.decode(String.self, forKey: .interface)
            captive = try container.decodeIfPresent(Bool.self, forKey: .captive)
            userPortalURL = try container.decodeIfPresent(String.self, forKey: .userPortalURL)
            venueInfoURL = try container.decodeIfPresent(String.self, forKey: .venueInfoURL)
            expires = try Self.date(container, .expires)
            bytesRemaining = try container.decodeIfPresent(Int64.self, forKey: .bytesRemaining)
            canExtendSession = try container.decodeIfPresent(Bool.self, forKey: .canExtendSession)
            error = try container.decodeIfPresent(String.self, forKey: .error)
        }

        private static func date(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Date? {
            guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let date = UTCTimestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not ISO 8601: \(text)")
            }
            return date
        }

        /// Every key is always present; absent values are `null`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(api, forKey: .api)
            try container.encode(source, forKey: .source)
            try container.encode(interface, forKey: .interface)
            try container.encode(captive, forKey: .captive)
            try container.encode(userPortalURL, forKey: .userPortalURL)
            try container.encode(venueInfoURL, forKey: .venueInfoURL)
            try container.encode(expires.map(UTCTimestamp.format), forKey: .expires)
            try container.encode(bytesRemaining, forKey: .bytesRemaining)
            try container.encode(canExtendSession, forKey: .canExtendSession)
            try container.encode(error, forKey: .error)
        }

        func write(_ object: inout JSONWriter.ObjectWriter) {
            object.string("api", api)
            object.string("source", source.rawValue)
            object.string("interface", interface)
            object.optionalBool("captive", captive)
            object.string("user-portal-url", userPortalURL)
            object.string("venue-info-url", venueInfoURL)
            object.timestamp("expires", expires)
            object.optionalInt("bytes-remaining", bytesRemaining.map(Int.init))
            object.optionalBool("can-extend-session", canExtendSession)
            object.string("error", error)
        }
    }
}
