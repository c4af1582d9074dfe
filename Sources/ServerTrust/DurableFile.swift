import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Files that survive a crash or a power cut the moment a call returns: written
/// to a temporary file beside the destination, fsynced, renamed, the directory
/// fsynced. What the report spool and its outbox are made of.
enum DurableFile {
    static func write(_ bytes: [UInt8], to destination: String) throws {
        let slash = destination.lastIndex(of: "/")
        let directory = slash.map { String(destination[..<$0]) } ?? "."
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        let temporary = "\(directory)/.\(name).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw SpoolError("creating \(temporary)", errno) }
        do {
            defer { close(descriptor) }
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { throw SpoolError("writing \(temporary)", errno) }
                offset += written
            }
            guard fsync(descriptor) == 0 else { throw SpoolError("syncing \(temporary)", errno) }
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, destination) == 0 else {
            let code = errno
            unlink(temporary)
            throw SpoolError("renaming \(temporary)", code)
        }
        try synchronize(directory: directory)
    }

    /// Removes `path` and makes the removal durable.
    static func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw SpoolError("removing \(path)", errno) }
        try synchronize(directory: path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ".")
    }

    /// The whole file, when it is a regular file of at most `limit` bytes.
    static func read(_ path: String, limit: Int) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { throw SpoolError("opening \(path)", errno) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw SpoolError("reading \(path)", errno) }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw SpoolError("\(path) is not a regular file") }
        guard status.st_size <= limit else { throw SpoolError("\(path) is larger than \(limit) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw SpoolError("reading \(path)", errno) }
            if count == 0 { break }
            offset += count
        }
        return Array(bytes[..<offset])
    }

    static func synchronize(directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SpoolError("opening \(directory)", errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw SpoolError("syncing \(directory)", errno) }
    }
}

/// A file operation of the report spool or outbox failed: what, and the system's reason.
public struct SpoolError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ operation: String, _ code: Int32) { description = "\(operation): \(String(cString: strerror(code)))" }
    init(_ description: String) { self.description = description }
}
