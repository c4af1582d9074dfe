import Foundation

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
    try text.write(to: temporary, atomically: false, encoding: .utf8)
    guard rename(temporary.path, file.path) == 0 else { throw POSIXError(.init(rawValue: errno)!) }
}

/// A scratch directory removed afterwards.
public func withScratch<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-test-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}
