import FoundationEssentials

/// An RFC 8908 captive-portal API document (`application/captive+json`), as a
/// network's portal serves it. reachd-trust fetches and parses it (the answer
/// of a server reachd does not control), then hands the parsed document to
/// reachd, which reads it with the same strict rules (docs/connectivity.md).
///
/// Strict where RFC 8908 is (the vectors of ChromeOS shill's capport tests):
/// `captive` must be a boolean; a `user-portal-url` or `venue-info-url` must be
/// an `https://` URL; `captive: true` without a `user-portal-url` is refused.
/// Lenient where it is safe: unknown keys are ignored, a negative or non-finite
/// `seconds-remaining`/`bytes-remaining` is dropped, and the remaining session
/// is dropped while captive (there is no session to count down yet).
public struct CaptivePortalAPIDocument: Codable, Equatable, Sendable {
    /// The client is captive: it must use the portal before it reaches the Internet.
    public var captive: Bool
    /// The portal's page for the user (https).
    public var userPortalURL: String?
    /// Information about the venue (https).
    public var venueInfoURL: String?
    /// Seconds left in the session, as of the answer.
    public var secondsRemaining: Int64?
    /// Bytes left in the session.
    public var bytesRemaining: Int64?
    /// Whether the user can extend the session at the portal.
    public var canExtendSession: Bool?

    /// Why a document was refused.
    public struct Invalid: Error, CustomStringConvertible, Equatable {
        /// What was wrong, naming the key: "captive is true without a user-portal-url".
        public let description: String
        /// A refusal saying why.
        public init(_ description: String) { self.description = description }
    }

    /// A document's whole answer fits in this: anything larger is not a captive-portal API.
    public static let sizeLimit = 64 * 1024
    /// URLs longer than this are refused (they go on the bus and into the log).
    public static let urlLimit = 2048

    /// A document with these fields (the parser's checks are not applied: use `parse(_:)` for what a network sent).
    public init(
        captive: Bool, userPortalURL: String? = nil, venueInfoURL: String? = nil, secondsRemaining: Int64? = nil,
        bytesRemaining: Int64? = nil, canExtendSession: Bool? = nil
    ) {
        self.captive = captive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.secondsRemaining = secondsRemaining
        self.bytesRemaining = bytesRemaining
        self.canExtendSession = canExtendSession
    }

    /// Parses a document's bytes; throws why it is not one. JSON is UTF-8 (RFC 8259
    /// §8.1; a byte-order mark before it is let through), read by the project's reader:
    /// `JSONDecoder` traps on 513 bytes a portal could send (BENCHMARKS.md §26).
    public static func parse(_ bytes: [UInt8]) throws(Invalid) -> CaptivePortalAPIDocument {
        guard bytes.count <= sizeLimit else { throw Invalid("the document is larger than \(sizeLimit) bytes") }
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        guard let json = String(validating: text, as: UTF8.self) else { throw Invalid("not UTF-8") }
        do {
            return try JSONReader.decode(CaptivePortalAPIDocument.self, from: json)
        } catch let invalid as Invalid {
            throw invalid
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            guard let key = context.codingPath.last else { throw Invalid("not a JSON object") }
            throw Invalid("\(key.stringValue) has the wrong type")
        } catch let DecodingError.keyNotFound(key, _) {
            throw Invalid("\(key.stringValue) is missing")
        } catch {
            throw Invalid("not a JSON object")
        }
    }

    /// Whether `text` is an https URL reachd repeats: printable ASCII, bounded, with a host.
    public static func isHTTPSURL(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        let scheme = Array("https://".utf8)
        guard bytes.count > scheme.count, bytes.count <= urlLimit, bytes.prefix(scheme.count).map({ $0 | 0x20 }) == scheme,
            bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return false }
        let authority = bytes[scheme.count...].prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        return !authority.isEmpty && !authority.contains(UInt8(ascii: "@"))
    }

    enum CodingKeys: String, CodingKey {
        case captive, userPortalURL = "user-portal-url", venueInfoURL = "venue-info-url", secondsRemaining = "seconds-remaining",
            bytesRemaining = "bytes-remaining", canExtendSession = "can-extend-session"
    }

    /// Reads a document with RFC 8908's rules (see the type's description); throws ``Invalid`` for a refused value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        captive = try container.decode(Bool.self, forKey: .captive)
        userPortalURL = try Self.url(container, .userPortalURL)
        venueInfoURL = try Self.url(container, .venueInfoURL)
        canExtendSession = try container.decodeIfPresent(Bool.self, forKey: .canExtendSession)
        if captive {
            guard userPortalURL != nil else { throw Invalid("captive is true without a user-portal-url") }
        } else {
            secondsRemaining = try Self.count(container, .secondsRemaining)
            bytesRemaining = try Self.count(container, .bytesRemaining)
        }
    }

    private static func url(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> String? {
        guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
        guard isHTTPSURL(text) else { throw Invalid("\(key.stringValue) is not an https:// URL of at most \(urlLimit) printable bytes") }
        return text
    }

    /// A JSON number that is a count: negative, fractional beyond a whole count, or absurd values are dropped.
    private static func count(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Int64? {
        guard let value = try container.decodeIfPresent(Double.self, forKey: key), value.isFinite, value >= 0 else { return nil }
        return value < 9.0e15 ? Int64(value.rounded(.down)) : nil
    }
}
