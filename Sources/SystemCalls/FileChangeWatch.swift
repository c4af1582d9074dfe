#if canImport(Glibc)
import Glibc
#endif

/// Tells when files are replaced, written or removed: inotify on the directories
/// that hold them, so a file replaced by rename (as resolvconf, NetworkManager and
/// systemd-resolved replace /etc/resolv.conf or its symlink's target) is seen as
/// surely as one rewritten in place. Poll `fileDescriptor`; `drain()` says whether
/// anything happened to a followed name since.
package final class FileChangeWatch {
    package let fileDescriptor: FileDescriptor
    /// Watch descriptor → the names watched in that directory.
    private var names: [Int32: Set<String>] = [:]
    /// Directory → its watch descriptor.
    private var directories: [String: Int32] = [:]

    package init() throws(SystemCallError) {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw SystemCallError("inotify_init1") }
        fileDescriptor = FileDescriptor(rawValue: descriptor)
    }

    deinit { try? fileDescriptor.close() }

    /// Watches exactly the files at `paths` from now on, each through its directory;
    /// one that does not exist yet is seen when it appears (its directory must exist).
    /// A directory watched before keeps its watch, so following another file of the
    /// same directory makes no system call: letting an inotify watch go waits for
    /// the kernel's RCU grace period, and reachd follows another link's file on the
    /// way to publishing a path (docs/development.md, "How a kernel change travels").
    /// - Returns: whether every file's directory is watched.
    @discardableResult
    package func follow(_ paths: [String]) -> Bool {
        var wanted: [String: Set<String>] = [:]
        for path in paths {
            let slash = path.lastIndex(of: "/") ?? path.startIndex
            let directory = slash == path.startIndex ? "/" : String(path[..<slash])
            wanted[directory, default: []].insert(String(path[path.index(after: slash)...]))
        }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB)
        var watchedAll = true
        var followed: [Int32: Set<String>] = [:]
        for (directory, files) in wanted {
            guard let descriptor = directories[directory] ?? addWatch(directory, mask: mask) else {
                watchedAll = false
                continue
            }
            // Two names of one directory (through a symlink) are one watch: the kernel says so.
            followed[descriptor, default: []].formUnion(files)
        }
        for (directory, descriptor) in directories where wanted[directory] == nil {
            directories[directory] = nil
            if followed[descriptor] == nil { inotify_rm_watch(fileDescriptor.rawValue, descriptor) }
        }
        names = followed
        return watchedAll
    }

    private func addWatch(_ directory: String, mask: UInt32) -> Int32? {
        let descriptor = inotify_add_watch(fileDescriptor.rawValue, directory, mask)
        guard descriptor >= 0 else { return nil }
        directories[directory] = descriptor
        return descriptor
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
                // The directory went (removed, or its file system unmounted): its watch with it.
                // The next `follow` watches it again if it is back.
                if mask & UInt32(IN_IGNORED) != 0, names[descriptor] != nil {
                    names[descriptor] = nil
                    directories = directories.filter { $0.value != descriptor }
                    changed = true
                }
                offset += header + length
            }
        }
    }
}
