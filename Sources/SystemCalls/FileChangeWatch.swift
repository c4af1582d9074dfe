#if canImport(Glibc)
import Glibc
#endif

/// Tells when files are replaced, written or removed: inotify on the directories
/// that hold them, so a file replaced by rename (as resolvconf, NetworkManager and
/// systemd-resolved replace /etc/resolv.conf or its symlink's target) is seen as
/// surely as one rewritten in place. Poll `fileDescriptor`; `drain()` says whether
/// anything happened to a watched name since.
package final class FileChangeWatch {
    package let fileDescriptor: FileDescriptor
    /// Watch descriptor → the names watched in that directory.
    private var names: [Int32: Set<String>] = [:]

    package init() throws(SystemCallError) {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw SystemCallError("inotify_init1") }
        fileDescriptor = FileDescriptor(rawValue: descriptor)
    }

    deinit { try? fileDescriptor.close() }

    /// Watches the files at `paths` (each through its directory; one that does not
    /// exist yet is seen when it appears, its directory must exist).
    package func watch(_ paths: [String]) {
        for path in paths {
            let slash = path.lastIndex(of: "/") ?? path.startIndex
            let directory = slash == path.startIndex ? "/" : String(path[..<slash])
            let name = String(path[path.index(after: slash)...])
            let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB)
            let descriptor = inotify_add_watch(fileDescriptor.rawValue, directory, mask)
            guard descriptor >= 0 else { continue }
            names[descriptor, default: []].insert(name)
        }
    }

    /// Forgets every watch (before watching another set of files).
    package func removeAll() {
        for descriptor in names.keys { inotify_rm_watch(fileDescriptor.rawValue, descriptor) }
        names = [:]
    }

    /// Reads every queued event; true when one concerned a watched name (or the
    /// kernel's queue overflowed, which may have hidden one).
    package func drain() -> Bool {
        var changed = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            // Empty (EAGAIN) or failed: what was read is all there is.
            guard let count = try? buffer.withUnsafeMutableBytes({ try fileDescriptor.read(into: $0) }), count > 0 else { return changed }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let (descriptor, mask, length) = buffer.withUnsafeBytes { raw in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, event.mask, Int(event.len))
                }
                let nameBytes = buffer[(offset + header)..<min(count, offset + header + length)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                if mask & UInt32(IN_Q_OVERFLOW) != 0 || names[descriptor]?.contains(name) == true { changed = true }
                offset += header + length
            }
        }
    }
}
