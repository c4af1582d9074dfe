import Crypto
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// The durable spool of pin-failure reports (`reports = /var/lib/reachd/reports`).
/// A report is on disk before anyone is told of it. A report with collectors
/// (`report-uri`) also goes into the ``ReportOutbox`` until they have it.
///
/// What an attacker cannot do with it (docs/security.md): fill the disk (at most
/// ``capacity`` reports and ``byteCapacity`` bytes, oldest evicted first, each
/// eviction said), or bury a
/// report under new ones (an identical report is not written again within 24
/// hours, TrustKit's rule, and a host under one pin set gets at most one report
/// per ``hostInterval`` whatever the chain an interceptor serves).
public struct ReportSpool: Sendable {
    /// Where reports are written, one file each.
    public let directory: String
    /// How long an identical report is not written again (24 hours).
    public let repeatInterval: TimeInterval
    /// How long after a report of a host no other report of it is written under the
    /// same pins (an hour): an interceptor that rotates its leaf at every round
    /// changes the report's identity, not the host or the configured pins.
    public let hostInterval: TimeInterval

    /// At most this many reports are kept; past it the oldest go.
    public static let capacity = 1024
    /// At most this many bytes of reports are kept (a report holds two PEM chains:
    /// a few KiB, far more only when a server sends a chain of many certificates).
    public static let byteCapacity = 16 << 20

    /// The spool in `directory`.
    public init(directory: String, repeatInterval: TimeInterval = 24 * 3600, hostInterval: TimeInterval = 3600) {
        self.directory = directory
        self.repeatInterval = repeatInterval
        self.hostInterval = hostInterval
    }

    /// Where undelivered reports wait: `<spool>/outbox`.
    public var outbox: ReportOutbox { ReportOutbox(directory: directory + "/outbox") }

    /// What one `write` did.
    public struct Written: Sendable, Equatable {
        /// The report's file.
        public var path: String
        /// Reports evicted to keep the spool and the outbox within their capacity (their names), to be said.
        public var evicted: [String] = []
    }

    /// Writes `report`, or returns nil when an identical one is younger than
    /// `repeatInterval` or another of the same host younger than `hostInterval`.
    ///
    /// The outbox entry is written before the spool file: a failure between the two
    /// (a crash, a full disk) leaves the report queued, and the next identical
    /// report finds it there and completes the spool instead of being dropped as a
    /// repeat of a report nobody will send.
    public func write(_ report: PinFailureReport, deliverTo collectors: [String] = []) throws -> Written? {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let spooled = try Self.names(in: directory)
        let queued = collectors.isEmpty ? [] : try outbox.names()
        let identity = try report.identity()
        let host = Self.hostTag(report)
        let name = "\(host)-\(identity)-\(Int(report.dateTime.timeIntervalSince1970)).json"
        let repeatSince = report.dateTime.addingTimeInterval(-repeatInterval)
        let hostSince = report.dateTime.addingTimeInterval(-hostInterval)

        if let interrupted = queued.first(where: { $0.contains(identity) && Self.time(of: $0) > repeatSince }) {
            // Queued by a write that did not finish: complete it.
            guard !spooled.contains(interrupted) else { return nil }
            let destination = "\(directory)/\(interrupted)"
            try DurableFile.write(Array(try report.json()), to: destination)
            return Written(path: destination, evicted: try evictSpool(listed: spooled + [interrupted]))
        }
        if spooled.contains(where: { $0.contains(identity) && Self.time(of: $0) > repeatSince }) { return nil }
        if spooled.contains(where: { $0.hasPrefix(host + "-") && Self.time(of: $0) > hostSince }) { return nil }

        var evicted: [String] = []
        if !collectors.isEmpty { evicted += try outbox.add(ReportOutbox.Entry(collectors: collectors, report: report), name: name) }
        let destination = "\(directory)/\(name)"
        try DurableFile.write(Array(try report.json()), to: destination)
        evicted += try evictSpool(listed: spooled + [name])
        return Written(path: destination, evicted: evicted)
    }

    /// The report files of `directory`, the spool's or the outbox's (temporary and
    /// set-aside files start with a dot); none when it does not exist yet. One that
    /// cannot be read throws: listed as empty, it would hide every report from the
    /// repeat check, eviction and the pending count.
    static func names(in directory: String) throws -> [String] {
        var status = stat()
        if lstat(directory, &status) != 0 && errno == ENOENT { return [] }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") && $0.hasSuffix(".json") }
        } catch {
            throw SpoolUnreadable(directory: directory, reason: "\(error)")
        }
    }

    /// A spool or outbox directory that cannot be listed.
    public struct SpoolUnreadable: Error, CustomStringConvertible {
        /// The directory.
        public let directory: String
        /// Why it cannot be listed, as the system said.
        public let reason: String
        /// `cannot list DIRECTORY: REASON`.
        public var description: String { "cannot list \(directory): \(reason)" }
    }

    /// Removes the oldest reports while more than `capacity` or `byteCapacity` are kept; their names.
    /// `listed`: the spool's names as the caller listed them a moment before (a report another
    /// process adds meanwhile is counted at the next write).
    func evictSpool(listed: [String]? = nil, capacity: Int = Self.capacity, byteCapacity: Int = Self.byteCapacity) throws -> [String] {
        // Each name's time is read once, not at every comparison of the sort (a full spool is 1,024 names).
        let spooled = try (listed ?? Self.names(in: directory)).map { name -> (name: String, time: Date, size: Int) in
            var status = stat()
            return (name, Self.time(of: name), stat("\(directory)/\(name)", &status) == 0 ? Int(status.st_size) : 0)
        }.sorted { $0.time < $1.time }
        var (count, bytes) = (spooled.count, spooled.reduce(0) { $0 + $1.size })
        var evicted: [String] = []
        for report in spooled where count > capacity || bytes > byteCapacity {
            try DurableFile.remove("\(directory)/\(report.name)")
            evicted.append("reports/\(report.name)")
            count -= 1
            bytes -= report.size
        }
        return evicted
    }

    /// Names end in `-<seconds since 1970>.json`.
    static func time(of name: String) -> Date {
        Date(timeIntervalSince1970: Double(name.dropLast(5).split(separator: "-").last ?? "") ?? 0)
    }

    /// A short tag of what the configuration says (the host, its port and pins), in the
    /// file name: the rate limit per host reads names only. Nothing a server sends is in it.
    static func hostTag(_ report: PinFailureReport) -> String {
        let digits = Array("0123456789abcdef")
        // Behind a portal or not apart, and on whose word: a portal's report must not hold back the attack's,
        // nor an announced portal's the one of a redirect its API contradicts.
        let portal =
            switch report.captivePortal?.kind {
            case nil: "false"
            case .redirect?: "true"
            case let kind?: kind.rawValue
            }
        let configured =
            ([report.hostname, String(report.port), String(report.enforcePinning), portal]
            + report.knownPins).joined(separator: "\n")
        return String(SHA256.hash(data: Array(configured.utf8)).prefix(4).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }
}
