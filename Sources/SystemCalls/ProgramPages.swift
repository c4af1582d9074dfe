import CLinuxShim

#if canImport(Glibc)
import Glibc
#endif

/// The running program's pages that hold exactly its file's bytes — its code and
/// read-only data, mapped from the executable and never written — and a way to let
/// them go from its resident set (docs/development.md, "Idle memory").
///
/// Start-up touches far more of a program than it runs afterwards: the Swift
/// runtime's first conformance lookups read every conformance record of the binary,
/// and the kernel maps the cached neighbours of each page a fault touches. Dropped
/// from the page table, such a page stays in the page cache, where the kernel can
/// reclaim it as any unmapped file page; one the program uses again is mapped back
/// from there at its next touch (a minor fault), identical, since the file is.
package enum ProgramPages {
    /// A mapping of the executable whose resident pages are all the file's own.
    package struct Mapping: Sendable {
        package let start: UInt
        package let end: UInt
        /// Resident when it was read, KiB.
        package let residentKiB: Int
    }

    /// The file a mapping maps, as smaps names it: its device and inode.
    package struct FileIdentity: Equatable, Sendable {
        package let major: UInt32
        package let minor: UInt32
        package let inode: UInt64

        package init(major: UInt32, minor: UInt32, inode: UInt64) {
            (self.major, self.minor, self.inode) = (major, minor, inode)
        }

        /// The running program's executable (followed through /proc/self/exe, so it
        /// holds for a binary replaced on disk since it started).
        package static func executable() throws(SystemCallError) -> FileIdentity {
            var status = stat()
            guard stat("/proc/self/exe", &status) == 0 else { throw SystemCallError("stat /proc/self/exe") }
            // glibc's dev_t layout (gnu_dev_major and gnu_dev_minor, macros Swift does not import).
            let device = UInt64(status.st_dev)
            return FileIdentity(
                major: UInt32(truncatingIfNeeded: ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)),
                minor: UInt32(truncatingIfNeeded: (device & 0xff) | ((device >> 12) & ~0xff)),
                inode: UInt64(status.st_ino))
        }
    }

    /// The mappings of `file` in `smaps` (the text of /proc/PID/smaps) that can be
    /// dropped without losing a byte: private, not writable, with no anonymous page
    /// resident or swapped. A writable mapping or one with a written page — relocated
    /// data, a debugger's breakpoint — is never one of them.
    package static func unmodified(in smaps: String, of file: FileIdentity) -> [Mapping] {
        var found: [Mapping] = []
        var candidate: (start: UInt, end: UInt)?
        var resident = 0, written = false
        func close() {
            if let mapping = candidate, !written { found.append(Mapping(start: mapping.start, end: mapping.end, residentKiB: resident)) }
            (candidate, resident, written) = (nil, 0, false)
        }
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard let key = fields.first else { continue }
            if !key.hasSuffix(":") {
                // A mapping's first line: "start-end perms offset major:minor inode [path]".
                close()
                guard fields.count >= 5 else { continue }
                let range = key.split(separator: "-"), device = fields[3].split(separator: ":")
                guard range.count == 2, device.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                    let major = UInt32(device[0], radix: 16), let minor = UInt32(device[1], radix: 16), let inode = UInt64(fields[4]),
                    FileIdentity(major: major, minor: minor, inode: inode) == file, fields[1].count == 4,
                    !fields[1].contains("w"), fields[1].hasSuffix("p")
                else { continue }
                candidate = (start, end)
                continue
            }
            guard candidate != nil, fields.count >= 2, let kilobytes = Int(fields[1]) else { continue }
            switch key {
            case "Rss:": resident = kilobytes
            case "Anonymous:", "Swap:": written = written || kilobytes > 0
            default: break
            }
        }
        close()
        return found
    }

    /// Drops this process's unmodified pages of its executable from its page table
    /// (`MADV_DONTNEED`, which for a private file mapping with no written page discards
    /// nothing the file does not hold). `smaps`: /proc/self/smaps, read just before.
    /// Returns how much was resident, KiB.
    @discardableResult
    package static func releaseUnmodified(smaps: String) throws(SystemCallError) -> Int {
        let mappings = unmodified(in: smaps, of: try FileIdentity.executable())
        for mapping in mappings {
            guard madvise(UnsafeMutableRawPointer(bitPattern: mapping.start), Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 else {
                throw SystemCallError("madvise MADV_DONTNEED")
            }
        }
        return mappings.reduce(0) { $0 + $1.residentKiB }
    }

    /// Loads, all at once, the lines of code and static data a change's wake-up touches,
    /// then the stack below the caller that it writes next, in a program that carries
    /// their list (release/wake-lines.sh); in any other, such as an app using the library,
    /// does nothing. On cold caches each of those lines is otherwise a miss that waits for
    /// the one before (docs/development.md, "The wake-up's lines").
    package static func touchWakeUpLines() {
        reachd_touch_wake_lines()
    }
}
