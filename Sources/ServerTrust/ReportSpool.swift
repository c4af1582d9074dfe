import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The durable spool of pin-failure reports (`reports = /var/lib/reachd/reports`).
/// A report is on disk before anyone is told of it; an identical report is not
/// written again within 24 hours (TrustKit's rule). A report with collectors
/// (`report-uri`) also goes into the ``ReportOutbox`` until they have it.
public struct ReportSpool: Sendable {
    /// Where reports are written, one file each.
    public let directory: String
    /// How long an identical report is not written again (24 hours).
    public let repeatInterval: TimeInterval

    /// The spool in `directory`.
    public init(directory: String, repeatInterval: TimeInterval = 24 * 3600) {
        self.directory = directory
        self.repeatInterval = repeatInterval
    }

    /// Where undelivered reports wait: `<spool>/outbox`.
    public var outbox: ReportOutbox { ReportOutbox(directory: directory + "/outbox") }

    /// Where the report was written, or nil when an identical one is younger than
    /// `repeatInterval`. A new report is queued for `collectors`, durably, before this returns.
    @discardableResult
    public func write(_ report: PinFailureReport, deliverTo collectors: [String] = []) throws -> String? {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let identity = report.identity
        let since = report.dateTime.addingTimeInterval(-repeatInterval)
        let existing = (try FileManager.default.contentsOfDirectory(atPath: directory)).compactMap { name -> Date? in
            // <identity>-<seconds since 1970>.json
            guard name.hasPrefix(identity + "-"), name.hasSuffix(".json"),
                  let seconds = Double(name.dropFirst(identity.count + 1).dropLast(5)) else { return nil }
            return Date(timeIntervalSince1970: seconds)
        }
        if existing.contains(where: { $0 > since }) { return nil }

        let name = "\(identity)-\(Int(report.dateTime.timeIntervalSince1970)).json"
        let destination = "\(directory)/\(name)"
        try DurableFile.write(Array(try report.json()), to: destination)
        if !collectors.isEmpty { try outbox.add(ReportOutbox.Entry(collectors: collectors, report: report), name: name) }
        return destination
    }
}
