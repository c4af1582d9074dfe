#if canImport(Glibc)
import SystemCalls
import Glibc
#endif

/// The node_exporter textfile: rewritten atomically (a temporary file in the same
/// directory, then rename), so the collector never reads half a file, and only
/// when the exposition changed.
package final class MetricsTextfile {
    package let path: String
    private var written: [UInt8]?
    /// The last failure, so that a directory that stays unwritable is logged once.
    private var lastError: String?
    private let log: (String) -> Void

    package init(path: String, log: @escaping (String) -> Void) {
        self.path = path
        self.log = log
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Writes `text` unless the file already holds it; a failure is logged once
    /// until the next success, and retried at the next change.
    package func update(_ text: [UInt8]) {
        guard text != written else { return }
        do {
            try Self.replace(path, with: text)
            written = text
            if lastError != nil { log("metrics: \(path) written again") }
            lastError = nil
        } catch {
            if lastError != error.description { log("metrics: \(error)") }
            lastError = error.description
        }
    }

    /// Removes the file (when the config no longer names it): stale metrics would lie.
    package func remove() {
        if written != nil { unlink(path) }
        written = nil
    }

    static func replace(_ path: String, with text: [UInt8]) throws(Failure) {
        let name = Array(path.utf8)
        let slash = name.lastIndex(of: UInt8(ascii: "/"))!
        // node_exporter skips names not ending in .prom, and so this one while it is written.
        var template = (name[...slash] + Array(".".utf8) + name[(slash + 1)...] + Array(".XXXXXX".utf8)).map { CChar(bitPattern: $0) } + [0]
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw Failure(description: "\(SystemCallError("cannot create a file beside \(path)"))") }
        // (mkostemp needs _GNU_SOURCE.) reachd-trust is started from this loop: the file must not leak into it.
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var failure: Int32 = 0
        do {
            _ = try FileDescriptor(rawValue: descriptor).writeAll(text)
        } catch {
            failure = (error as? Errno)?.rawValue ?? EIO
        }
        // The service's umask is 0077; node_exporter runs as another user and must read it.
        if failure == 0, fchmod(descriptor, 0o644) != 0 { failure = errno }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw Failure(description: "\(SystemCallError("cannot write \(path)", errno: Errno(rawValue: failure)))")
        }
    }
}
