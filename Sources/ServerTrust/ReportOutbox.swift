import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Pin-failure reports whose collectors have not answered yet: one file per
/// report in `<spool>/outbox`, holding the report and the collectors still to
/// answer 2xx. Delivery is retried (by reachd: with back-off and on every path
/// change, across restarts) until every collector has the report, or until it
/// has failed ``maximumAttempts`` passes and is older than ``maximumAge``: a
/// clock stepped forward (or a report dated in the future by a clock that was)
/// cannot drop reports that were never tried.
public struct ReportOutbox: Sendable {
    /// Where waiting reports are kept, one file each.
    public let directory: String

    /// Reports older than this, once tried ``maximumAttempts`` times, are dropped
    /// undelivered (a collector gone for a week is gone).
    public static let maximumAge: TimeInterval = 7 * 24 * 3600
    /// Delivery passes a report must have failed before it may be dropped for its age
    /// (reachd retries hourly at the slowest: a week of them).
    public static let maximumAttempts = 168
    /// At most this many reports wait; a new one beyond it replaces the oldest.
    public static let capacity = 256
    /// An entry larger than this is not a report of ours (chains are a few KiB).
    static let maximumEntrySize = 1 << 20
    /// Deliveries in flight at once.
    static let concurrency = 8

    /// The outbox in `directory`, created when the first report is added.
    public init(directory: String) {
        self.directory = directory
    }

    /// One waiting report: `{"collectors": [URIs still to answer], "report": {…}}`.
    public struct Entry: Codable, Sendable, Equatable {
        /// The report-uris that have not taken the report yet.
        public var collectors: [String]
        /// The report.
        public var report: PinFailureReport
        /// Delivery passes that left a collector without it.
        public var attempts: Int

        /// A report waiting for `collectors`.
        public init(collectors: [String], report: PinFailureReport, attempts: Int = 0) {
            self.collectors = collectors
            self.report = report
            self.attempts = attempts
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            collectors = try container.decode([String].self, forKey: .collectors)
            report = try container.decode(PinFailureReport.self, forKey: .report)
            attempts = try container.decodeIfPresent(Int.self, forKey: .attempts) ?? 0
        }

        /// Past its time: tried often enough, and older than ``ReportOutbox/maximumAge`` —
        /// or dated in the future, which no waiting can fix.
        func hasExpired(at now: Date) -> Bool {
            let age = now.timeIntervalSince(report.dateTime)
            return attempts >= ReportOutbox.maximumAttempts && (age > ReportOutbox.maximumAge || age < 0)
        }

        /// Reads an entry file's bytes; what a crash, a full disk or another hand
        /// may have left there is an error, never a trap.
        public init(reading bytes: [UInt8]) throws {
            guard bytes.count <= ReportOutbox.maximumEntrySize else {
                throw SpoolError("larger than \(ReportOutbox.maximumEntrySize) bytes")
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            do {
                self = try decoder.decode(Entry.self, from: Data(bytes))
            } catch {
                throw SpoolError("not an outbox entry (\(error))")
            }
            guard !collectors.isEmpty else { throw SpoolError("names no collector") }
        }

        func json() throws -> [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            return Array(try encoder.encode(self))
        }
    }

    /// What one delivery pass did.
    public struct Delivery: Sendable, Equatable {
        /// Reports every collector now has (their files are gone).
        public var delivered = 0
        /// Reports dropped undelivered: older than ``maximumAge``, or unreadable.
        public var dropped = 0
        /// Reports still waiting.
        public var pending = 0
        /// Why a collector did not take a report, why one was dropped.
        public var errors: [String] = []
        /// Reports lost or unaccounted for: dropped unreadable, an entry that could not be
        /// updated, an outbox that could not be listed (each also in ``errors``).
        public var failures = 0

        /// Nothing delivered yet.
        public init() {}
    }

    /// Queues `entry`; the entries evicted to make room (their names), to be said.
    func add(_ entry: Entry, name: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let waiting = try names()
        var evicted: [String] = []
        if waiting.count >= Self.capacity {
            // Names end in the report's time: the oldest first once sorted by it.
            for old in waiting.sorted(by: { ReportSpool.time(of: $0) < ReportSpool.time(of: $1) }).prefix(waiting.count - Self.capacity + 1)
            {
                try DurableFile.remove("\(directory)/\(old)")
                evicted.append("outbox/\(old)")
            }
        }
        try DurableFile.write(try entry.json(), to: "\(directory)/\(name)")
        return evicted
    }

    /// The entry files.
    func names() throws -> [String] { try ReportSpool.names(in: directory) }

    /// How many reports wait; 0 when the outbox cannot be read (``countPending()`` says why).
    public var pendingCount: Int { (try? countPending()) ?? 0 }

    /// How many reports wait, or why that cannot be known.
    public func countPending() throws -> Int { try names().count }

    /// Sends every waiting report with `post` (which throws unless the collector
    /// answered 2xx) to the collectors that do not have it yet and that `route` allows,
    /// drops those older past their time at `now` (``Entry/hasExpired(at:)``), and sets
    /// aside unreadable entries as `.NAME.invalid`. A pass in which no collector of an
    /// entry could be tried is not an attempt of that entry.
    func deliver(now: Date, route: ReportRoute, post: @escaping @Sendable (String, [UInt8]) async throws -> Void) async -> Delivery {
        var outcome = Delivery()
        var waiting: [(name: String, entry: Entry, body: [UInt8])] = []
        let names: [String]
        do {
            names = try self.names()
        } catch {
            outcome.errors.append("\(error)")
            outcome.failures += 1
            return outcome
        }
        for name in names {
            let path = "\(directory)/\(name)"
            do {
                let entry = try Entry(reading: try DurableFile.read(path, limit: Self.maximumEntrySize))
                if entry.hasExpired(at: now) {
                    try DurableFile.remove(path)
                    outcome.dropped += 1
                    outcome.errors.append(
                        "report \(name) for \(entry.report.hostname) dropped undelivered after \(entry.attempts) attempts and 7 days (\(entry.collectors.joined(separator: ", ")))"
                    )
                } else {
                    waiting.append((name, entry, Array(try entry.report.json())))
                }
            } catch {
                rename(path, "\(directory)/.\(name).invalid")
                outcome.dropped += 1
                outcome.failures += 1
                outcome.errors.append("outbox/\(name): \(error); set aside as .\(name).invalid")
            }
        }
        // Every (report, collector) pair, a few at a time.
        let attempts = waiting.indices.flatMap { index in waiting[index].entry.collectors.filter(route.allows).map { (index, $0) } }
        let tried = Set(attempts.map(\.0))
        var answered = [Set<String>](repeating: [], count: waiting.count)
        await withTaskGroup(of: (Int, String, String?).self) { group in
            var next = attempts.makeIterator()
            func startNext() -> Bool {
                guard let (index, collector) = next.next() else { return false }
                let (body, hostname) = (waiting[index].body, waiting[index].entry.report.hostname)
                group.addTask {
                    do {
                        try await post(collector, body)
                        return (index, collector, nil)
                    } catch {
                        return (index, collector, "report for \(hostname) to \(collector): \(TLSProbe.describe(error))")
                    }
                }
                return true
            }
            for _ in 0..<Self.concurrency {
                guard startNext() else { break }
            }
            for await (index, collector, failure) in group {
                if let failure { outcome.errors.append(failure) } else { answered[index].insert(collector) }
                _ = startNext()
            }
        }
        for (index, item) in waiting.enumerated() {
            let path = "\(directory)/\(item.name)"
            var entry = item.entry
            entry.collectors.removeAll { answered[index].contains($0) }
            do {
                if entry.collectors.isEmpty {
                    try DurableFile.remove(path)
                    outcome.delivered += 1
                    continue
                }
                if tried.contains(index) {
                    entry.attempts += 1
                    try DurableFile.write(try entry.json(), to: path)
                }
            } catch {
                outcome.errors.append("\(error)")
                outcome.failures += 1
            }
            outcome.pending += 1
        }
        return outcome
    }

    /// One delivery pass over HTTP(S): each report POSTed as JSON, `timeout` for each POST.
    /// With `checker`, an https collector is judged as the checker judges a host — the
    /// policy (pins included) and `connect` address of the entry that matches its name,
    /// else the default evaluation — and a collector that fails is not sent the report:
    /// only the genuine collector may take it out of the outbox (docs/security.md).
    /// Without, NIOSSL checks it against the system's roots. `route`: which collectors
    /// the path allows (plain-HTTP ones only over an unaltered path); the default allows all.
    public func deliver(
        now: Date = Date(), timeout: Duration, judgedBy checker: TrustChecker? = nil,
        route: ReportRoute = ReportRoute(connectivity: nil, trust: .ok)
    ) async -> Delivery {
        await deliver(now: now, route: route) { collector, body in
            var post = HTTPExchange(url: collector, body: body, contentType: "application/json", timeout: timeout.timeAmount)
            if let checker {
                post.judge = { host, chain in await checker.judgeCollector(host, chain: chain) }
                post.address = (try? HTTPExchange.Target(collector)).flatMap { checker.configuration.hosts.lookup($0.host)?.value.connect }
            }
            _ = try await post.send()
        }
    }
}
