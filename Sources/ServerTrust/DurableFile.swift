import FoundationEssentials
import SystemPackage

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
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(
                temporary, .writeOnly, options: [.create, .truncate, .closeOnExec], permissions: [.ownerReadWrite, .groupRead])
        } catch {
            throw SpoolError("creating \(temporary)", error)
        }
        do {
            defer { try? file.close() }
            do {
                _ = try file.writeAll(bytes)
            } catch {
                throw SpoolError("writing \(temporary)", error)
            }
            guard fsync(file.rawValue) == 0 else { throw SpoolError("syncing \(temporary)", errno) }
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
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec, .noFollow, .nonBlocking])
        } catch {
            throw SpoolError("opening \(path)", error)
        }
        defer { try? file.close() }
        var status = stat()
        guard fstat(file.rawValue, &status) == 0 else { throw SpoolError("reading \(path)", errno) }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw SpoolError("\(path) is not a regular file") }
        guard status.st_size <= limit else { throw SpoolError("\(path) is larger than \(limit) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var offset = 0
        while offset < bytes.count {
            let count: Int
            do {
                count = try bytes[offset...].withUnsafeMutableBytes { try file.read(into: $0) }
            } catch {
                throw SpoolError("reading \(path)", error)
            }
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
    init(_ operation: String, _ code: Int32) { description = "\(operation): \(Errno(rawValue: code))" }
    /// A failure swift-system threw (an `Errno` says itself as `strerror` does).
    init(_ operation: String, _ error: any Error) { description = "\(operation): \(error)" }
    init(_ description: String) { self.description = description }
}
