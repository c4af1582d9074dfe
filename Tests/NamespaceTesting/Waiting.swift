import Foundation
import SystemPackage

/// Polls `condition` until it holds, checking once more after the deadline: a
/// starved task (the suites run in parallel on 2 cores) may wake only after it.
public func eventually(
    _ timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(25),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}

/// Replaces `file` as resolvconf and NetworkManager do: a new file renamed over it.
public func replaceAtomically(_ file: URL, with text: String) throws {
    let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).new")
    try write(text, to: temporary)
    guard rename(temporary.path, file.path) == 0 else { throw POSIXError(.init(rawValue: errno)!) }
}

/// Writes `text` to `file`, created or truncated, through a descriptor opened close-on-exec,
/// which Foundation's `write` does not do: a process that another test spawns meanwhile
/// could then hold the file open for as long as it runs (CI saw more than 5 s), and its
/// last close would be an `IN_CLOSE_WRITE` long after the write — a change nobody made
/// then, or a change that does not come in time, for whatever watches the file.
public func write(_ text: String, to file: URL) throws {
    let descriptor = try FileDescriptor.open(
        FilePath(file.path), .writeOnly, options: [.create, .truncate, .closeOnExec],
        permissions: [.ownerReadWrite, .groupRead, .otherRead])
    try descriptor.closeAfter { _ = try descriptor.writeAll(text.utf8) }
}

/// A scratch directory removed afterwards.
public func withScratch<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-test-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}
