import FoundationEssentials
import NIOCore
import TOML
import X509

/// The `[trust]` part of reachd.toml: when to re-check, how long a probe may
/// take, where pin-failure reports go, and the `[[trust.host]]` table.
public struct TrustConfiguration: Sendable {
    /// When hosts are checked again; the raw values are the config's `recheck`.
    public enum Recheck: String, Sendable, CaseIterable {
        /// On every published path change.
        case onChange = "on-change"
        /// Every `interval`.
        case interval
        /// On every change and every `interval`.
        case both
    }

    /// When hosts are checked again.
    public var recheck: Recheck = .onChange
    /// For `interval` and `both`.
    public var interval: Duration = .seconds(6 * 3600)
    /// Connect and handshake timeout of each probe (each, not together).
    public var timeout: Duration = .seconds(5)
    /// The durable spool of pin-failure reports.
    public var reports: String = "/var/lib/reachd/reports"
    /// How reachd knows that the clock can be believed (`clock-synchronized`): before
    /// it is, a certificate outside its validity period says more about the clock
    /// than about the server.
    public var clock: ClockSource = .system
    /// `allow-http-report-uri`: plain-HTTP collectors are accepted, and warned about at
    /// every start. Off by default: anyone on the path reads such a report, and can
    /// answer 2xx for the collector, which takes the report out of the outbox.
    public var allowsHTTPReportURIs = false
    /// The `[[trust.host]]` entries by pattern.
    public var hosts = HostTable<HostTrustConfiguration>()

    /// No hosts, the defaults.
    public init() {}

    /// The plain-HTTP collectors `allow-http-report-uri` let in: said at every start.
    public var plainHTTPReportURIs: [String] {
        Array(Set(hosts.entries.flatMap(\.value.reportURIs).filter { $0.lowercased().hasPrefix("http://") })).sorted()
    }

    /// The hosts a check dials: the exact patterns. Wildcard entries only give
    /// their policy to names looked up (`reachctl trust check`, the in-app adapter).
    public var probedHosts: [HostTrustConfiguration] {
        hosts.entries.filter { $0.pattern.kind == .exact }.map(\.value)
    }

    /// Reads the `[trust]` table of a reachd.toml; no table means no hosts.
    ///
    /// - Throws: `TOMLError` (`file:line: reason`) for syntax errors, unknown keys,
    ///   bad values and policies that cannot work; `file: reason` when it cannot be read.
    public static func load(contentsOf file: String) throws -> TrustConfiguration {
        var root = TOMLTableReader(try TOML.parse(contentsOfFile: file), file: file, name: "")
        guard var trust = try root.table("trust") else { return TrustConfiguration() }
        let directory = file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) : "."
        return try TrustConfiguration(reading: &trust, relativeTo: directory)
    }

    /// Reads a `[trust]` table; relative file names are taken from `directory`.
    package init(reading table: inout TOMLTableReader, relativeTo directory: String) throws {
        if let (text, line) = try table.string("recheck") {
            guard let recheck = Recheck(rawValue: text) else {
                throw table.error(
                    "recheck must be one of \(Recheck.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(text)\"", line: line)
            }
            self.recheck = recheck
        }
        if let (value, text, line) = try table.duration("interval") {
            interval = value
            guard interval >= .seconds(60) else { throw table.error("interval must be at least 1m, not \(text)", line: line) }
        }
        if let (value, text, line) = try table.duration("timeout") {
            timeout = value
            guard timeout > .zero, timeout <= .seconds(300) else {
                throw table.error("timeout must be more than 0 and at most 5m, not \(text)", line: line)
            }
        }
        if let (text, _) = try table.string("reports") { reports = Self.resolve(text, in: directory) }
        if let (text, _) = try table.string("clock-synchronized") { clock = .flagFile(Self.resolve(text, in: directory)) }
        allowsHTTPReportURIs = try table.bool("allow-http-report-uri") ?? false
        if let value = table.value("host") {
            guard case let .array(elements) = value.kind else {
                throw table.error("host must be an array of tables ([[trust.host]])", line: value.line)
            }
            for element in elements {
                guard case let .table(entry) = element.kind else {
                    throw table.error("host must be an array of tables ([[trust.host]])", line: element.line)
                }
                var reader = TOMLTableReader(entry, file: table.file, name: "[[trust.host]]")
                let host = try HostTrustConfiguration(reading: &reader, relativeTo: directory, line: element.line)
                if !allowsHTTPReportURIs, let plain = host.reportURIs.first(where: { $0.lowercased().hasPrefix("http://") }) {
                    throw reader.error(
                        "report-uri \"\(plain)\" is plain HTTP: anyone on the path can read the report, and answer for the collector; use https://, or set allow-http-report-uri = true in [trust]",
                        line: element.line)
                }
                do {
                    try hosts.add(host.pattern, host)
                } catch {
                    throw reader.error("\(error)", line: element.line)
                }
            }
        }
        try table.finish()
    }

    static func resolve(_ path: String, in directory: String) -> String {
        path.hasPrefix("/") ? path : "\(directory)/\(path)"
    }
}

extension Duration {
    var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
