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
///
/// The new file is opened close-on-exec, which Foundation's `write` does not do: a
/// process another test forks meanwhile would hold it open, and its last close, long
/// after the rename, would be one more `IN_CLOSE_WRITE` under the file's new name — a
/// change nobody made, seen by whatever watches the directory then (CI saw one).
public func replaceAtomically(_ file: URL, with text: String) throws {
    let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).new")
    let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno)!) }
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    let failure = errno
    close(descriptor)
    guard written == bytes.count else { throw POSIXError(.init(rawValue: written < 0 ? failure : EIO)!) }
    guard rename(temporary.path, file.path) == 0 else { throw POSIXError(.init(rawValue: errno)!) }
}

/// A scratch directory removed afterwards.
public func withScratch<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reachd-test-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}
