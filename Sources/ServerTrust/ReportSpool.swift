import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The durable spool of pin-failure reports (`reports = /var/lib/reachd/reports`).
/// A report is on disk — written to a temporary file, fsynced, renamed, the
/// directory fsynced — before anyone is told of it; an identical report is not
/// written again within 24 hours (TrustKit's rule).
public struct ReportSpool: Sendable {
    public let directory: String
    public let repeatInterval: TimeInterval

    public init(directory: String, repeatInterval: TimeInterval = 24 * 3600) {
        self.directory = directory
        self.repeatInterval = repeatInterval
    }

    /// Where the report was written, or nil when an identical one is younger than `repeatInterval`.
    @discardableResult
    public func write(_ report: PinFailureReport) throws -> String? {
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
        let temporary = "\(directory)/.\(name).tmp"
        try durablyWrite(try report.json(), to: temporary)
        guard rename(temporary, destination) == 0 else { throw SpoolError("renaming \(temporary)", errno) }
        try synchronize(directory: directory)
        return destination
    }

    private func durablyWrite(_ data: Data, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw SpoolError("creating \(path)", errno) }
        defer { close(descriptor) }
        var offset = 0
        let bytes = [UInt8](data)
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw SpoolError("writing \(path)", errno) }
            offset += written
        }
        guard fsync(descriptor) == 0 else { throw SpoolError("syncing \(path)", errno) }
    }

    private func synchronize(directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SpoolError("opening \(directory)", errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw SpoolError("syncing \(directory)", errno) }
    }
}

public struct SpoolError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ operation: String, _ code: Int32) { description = "\(operation): \(String(cString: strerror(code)))" }
}
