import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A file read whole, up to a size no file of its kind exceeds: a config file
/// here, a certificate file in ServerTrust. Stops `/dev/zero` or a log named by
/// mistake from being read into memory, and a FIFO from being read at all:
/// opening one nobody writes to would block the daemon's start, or its loop on a
/// reload, until the watchdog kills it. Says the system's reason when it fails.
public enum SmallFile {
    public enum Failure: Error, Equatable {
        /// The system's reason (`strerror`).
        case unreadable(String)
        /// Larger than the limit, in bytes.
        case tooLarge(Int)
    }

    public static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let file: FileDescriptor
        do {
            // nonBlocking: opening a FIFO returns at once (on a regular file the flag does nothing).
            file = try FileDescriptor.open(
                path, .readOnly, options: [.closeOnExec, .nonBlocking, FileDescriptor.OpenOptions(rawValue: O_NOCTTY)])
        } catch {
            throw .unreadable("\(error)")
        }
        defer { try? file.close() }
        var status = stat()
        guard fstat(file.rawValue, &status) == 0 else { throw .unreadable("\(Errno(rawValue: errno))") }
        // Devices are read as files (/dev/null is an empty config), under the limit.
        guard status.st_mode & S_IFMT != S_IFIFO else { throw .unreadable("it is a FIFO, not a file") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count: Int
            do {
                count = try chunk.withUnsafeMutableBytes { try file.read(into: $0) }
            } catch {
                throw .unreadable("\(error)")
            }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            guard bytes.count <= limit else { throw .tooLarge(limit) }
        }
    }
}
