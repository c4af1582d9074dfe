import IPAddresses
import SystemCalls
import TOML

/// The `[connectivity]` table of reachd.toml (and the in-process monitor's probe):
/// without a `uri` nothing is ever contacted.
public struct ConnectivityOptions: Sendable, Equatable {
    /// The probe's URL; nil: no HTTP probe.
    public var uri: ProbeURI?
    /// "": the probe must answer 204, or 200 with an empty body; else a 200 whose body starts with this.
    public var response: String
    /// The probe's period while connectivity is full, and the longest back-off while it is not.
    public var interval: Duration
    /// Per attempt: name resolution, connect, request and answer together.
    public var timeout: Duration
    /// Where reachd learns the network's captive-portal API (RFC 8910/8908). The
    /// in-process monitor does not query it: the API is HTTPS, and TLS runs in reachd-trust.
    public var capport: CaptivePortalAPISetting = .discover
    /// Certificates (PEM files, absolute paths) trusted for the API beside the system's roots.
    public var capportAnchors: [String] = []
    /// Where systemd-networkd's link state is read (its `CAPTIVE_PORTAL=`); nil: not read.
    public var networkdLinks: String? = "/run/systemd/netif/links"

    /// `[connectivity] capport`.
    public enum CaptivePortalAPISetting: Sendable, Equatable {
        /// `"auto"`: the URI the network announces (router advertisements, networkd's link state).
        case discover
        /// `"off"`: no API is ever queried.
        case off
        /// An `https://` URI: used where the network announces none.
        case uri(String)
    }

    /// The probe's settings; the defaults are reachd's, and without a `uri` nothing is contacted.
    ///
    /// - Parameters:
    ///   - uri: The `http://` URL to probe; nil switches the probe off.
    ///   - response: What a 200's body must start with; "" accepts 204, or 200 with an empty body.
    ///   - interval: The period while connectivity is full, and the longest back-off while it is not.
    ///   - timeout: One attempt's limit: resolution, connect, request and answer together.
    public init(uri: ProbeURI? = nil, response: String = "", interval: Duration = .seconds(300), timeout: Duration = .seconds(5)) {
        self.uri = uri
        self.response = response
        self.interval = interval
        self.timeout = timeout
    }

    /// An `http://` URL: a host name or IP address (IPv6 in brackets), an optional
    /// port, a path. Plain HTTP on purpose: a captive portal is recognised by how
    /// it answers HTTP, and a TLS probe would only see its certificate fail.
    public struct ProbeURI: Sendable, Equatable, CustomStringConvertible {
        /// The name or address to dial (no brackets), and the `Host` header's value.
        public var host: String
        /// The TCP port: the URL's, or 80.
        public var port: UInt16
        /// From the first `/`, query included; "/" when the URL has none.
        public var target: String
        /// The URL as written.
        public var description: String

        /// Parses an `http://` URL; nil for anything else (another scheme, user
        /// info, a fragment, spaces or control characters, a bad port).
        public init?(_ text: String) {
            let bytes = Array(text.utf8)
            let scheme = Array("http://".utf8)
            guard bytes.count > scheme.count, bytes.prefix(scheme.count).map({ $0 | 0x20 }) == scheme,
                bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") })
            else { return nil }
            let rest = bytes[scheme.count...]
            let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
            let authority = rest[..<slash]
            guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
            var hostBytes = authority
            var port: UInt16 = 80
            if authority.first == UInt8(ascii: "[") {
                guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
                hostBytes = authority[(authority.startIndex + 1)..<close]
                let after = authority[(close + 1)...]
                if !after.isEmpty {
                    guard after.first == UInt8(ascii: ":"), let number = Self.port(after.dropFirst()) else { return nil }
                    port = number
                }
                guard IPAddress(String(decoding: hostBytes, as: UTF8.self))?.family == .v6 else { return nil }
            } else if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
                hostBytes = authority[..<colon]
                guard let number = Self.port(authority[(colon + 1)...]) else { return nil }
                port = number
            }
            let host = String(decoding: hostBytes, as: UTF8.self)
            guard IPAddress(host) != nil || HostResolver.isHostName(host) else { return nil }
            self.host = host
            self.port = port
            target = slash == rest.endIndex ? "/" : String(decoding: rest[slash...], as: UTF8.self)
            description = text
        }

        private static func port(_ digits: ArraySlice<UInt8>) -> UInt16? {
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ (48...57).contains($0) }),
                let number = UInt16(String(decoding: digits, as: UTF8.self)), number > 0
            else { return nil }
            return number
        }

        /// The `Host` header: brackets around an IPv6 literal, the port when not 80.
        public var hostHeader: String {
            let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
            return port == 80 ? name : "\(name):\(port)"
        }
    }

    /// Reads a `[connectivity]` table, rejecting unknown keys and bad values with `file:line`.
    public init(reading table: inout TOMLTableReader) throws(TOMLError) {
        self.init()
        if let (text, line) = try table.string("uri") {
            guard let uri = ProbeURI(text) else {
                throw table.error(
                    "uri must be an http:// URL (\"http://connectivity-check.example.net/generate_204\"), not \"\(text)\"", line: line)
            }
            self.uri = uri
        }
        if let (text, line) = try table.string("response") {
            guard text.utf8.count <= 1024 else { throw table.error("response must be at most 1024 bytes", line: line) }
            response = text
        }
        if let (value, text, line) = try table.duration("interval") {
            guard value >= .seconds(10) else { throw table.error("interval must be at least 10s, not \(text)", line: line) }
            interval = value
        }
        if let (value, text, line) = try table.duration("timeout") {
            guard value > .zero, value <= .seconds(60) else {
                throw table.error("timeout must be more than 0 and at most 1m, not \(text)", line: line)
            }
            timeout = value
        }
        if let (text, line) = try table.string("capport") {
            switch text {
            case "auto": capport = .discover
            case "off": capport = .off
            case _ where CaptivePortalAPIDocument.isHTTPSURL(text): capport = .uri(text)
            default:
                throw table.error(
                    "capport must be \"auto\", \"off\" or an https:// URL (RFC 8908's API is HTTPS only), not \"\(text)\"", line: line)
            }
        }
        if let (text, _) = try table.string("networkd-links") { networkdLinks = text.isEmpty ? nil : text }
        let directory = table.file.lastIndex(of: "/").map { String(table.file[..<$0]) } ?? "."
        for (name, line) in try table.strings("capport-anchors") ?? [] {
            let path = name.hasPrefix("/") ? name : "\(directory)/\(name)"
            // Read now, so that a missing file is refused with its line rather than found out at the first query.
            do {
                _ = try SmallFile.read(path, limit: 16 << 20)
            } catch .unreadable(let reason) {
                throw table.error("capport-anchors: \(path) cannot be read (\(reason))", line: line)
            } catch {
                throw table.error("capport-anchors: \(path) is larger than 16 MiB: not a certificate file", line: line)
            }
            capportAnchors.append(path)
        }
        try table.finish()
    }

    /// The `[connectivity]` table of `file`, or the defaults when it has none.
    public static func load(contentsOf file: String) throws -> ConnectivityOptions {
        let document = try TOML.parse(contentsOfFile: file)
        var root = TOMLTableReader(document, file: file, name: "")
        guard var table = try root.table("connectivity") else { return ConnectivityOptions() }
        return try ConnectivityOptions(reading: &table)
    }
}
