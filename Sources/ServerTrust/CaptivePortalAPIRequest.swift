import NIOCore
import X509

/// One query of a network's captive-portal API (RFC 8908): a GET asking for
/// `application/captive+json` over HTTPS only, the server's chain validated
/// against the system's roots (and any anchors configured for it) under the
/// web PKI's rules, bound to the interface the API was learnt on, bounded in
/// size and time. Parsing the document is the caller's (reachd-trust's) part.
public struct CaptivePortalAPIRequest: Sendable {
    /// Why there is no document.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What failed: the connection, TLS (with the validation's reason), the HTTP status, the media type.
        public let description: String
        /// The server answered, but not with an API document (another media type,
        /// too large): the API is misconfigured or not what answered.
        public let answered: Bool
    }

    /// The API's URI: `https://` only.
    public var uri: String
    /// The interface the request leaves by; nil: as the routes say.
    public var interfaceIndex: Int32?
    /// The roots the server's chain must lead to.
    public var anchors: [Certificate]
    /// For the whole exchange: connect, handshake, request, answer.
    public var timeout: Duration

    /// The answer is a small JSON object: anything larger is refused.
    public static let sizeLimit = 64 * 1024

    /// A query of `uri` through `interfaceIndex`, trusting `anchors`.
    public init(uri: String, interfaceIndex: Int32?, anchors: [Certificate], timeout: Duration) {
        self.uri = uri
        self.interfaceIndex = interfaceIndex
        self.anchors = anchors
        self.timeout = timeout
    }

    /// The body of the API's answer.
    public func fetch() async throws(Failure) -> [UInt8] {
        guard uri.lowercased().hasPrefix("https://") else {
            throw Failure(description: "\(uri) is not an https:// URL: RFC 8908's API is HTTPS only", answered: false)
        }
        let validator = ChainValidator(anchors: anchors)
        var request = HTTPExchange(url: uri, timeout: .nanoseconds(Int64(timeout / .nanoseconds(1))))
        request.accept = "application/captive+json"
        request.interfaceIndex = interfaceIndex
        request.maximumResponseSize = Self.sizeLimit
        request.judge = { host, chain in
            switch await validator.validate(chain, host: host) {
            case .trusted: nil
            case let .untrusted(evaluation): "\(evaluation.verdict.rawValue): \(evaluation.reason)"
            }
        }
        let answer: (body: [UInt8], contentType: String?)
        do {
            answer = try await request.exchange()
        } catch let failure as HTTPExchange.Failure {
            throw Failure(description: failure.description, answered: failure.answered)
        } catch {
            throw Failure(description: "\(uri): \(TLSProbe.describe(error))", answered: false)
        }
        let mediaType = String((answer.contentType ?? "").prefix { $0 != ";" }.filter { $0 != " " && $0 != "\t" }).lowercased()
        guard mediaType == "application/captive+json" || mediaType == "application/json" else {
            throw Failure(
                description: "\(uri) answered \(mediaType.isEmpty ? "without a media type" : mediaType), not application/captive+json",
                answered: true)
        }
        return answer.body
    }
}
