import Foundation
import NamespaceTesting
import SystemCalls
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What `FileChangeWatch.follow` asks of the kernel: a directory watched before keeps
/// its watch (reachd follows another link's networkd file on the way to publishing a
/// path, and letting a watch go waits for an RCU grace period: docs/development.md,
/// "How a kernel change travels"), only the followed names count, and a directory
/// removed and made again is watched again.
@Suite("FileChangeWatch: another file of the same directory is followed without a system call")
struct FileChangeWatchTests {
    /// Replaces the file at `path` as networkd does: written beside it, then renamed over it.
    /// A file written in place is seen at its last close, and a process that another test
    /// forks at that moment holds it open: its `IN_CLOSE_WRITE` could come after the drain
    /// that looked for it, and count in the next (each seen once, in whole-suite runs on a
    /// loaded machine). A rename is seen in the call itself; and the new file is opened
    /// close-on-exec (`write(_:to:)`), as Foundation's `Data.write(options: .atomic)`
    /// does not: a spawned child's late close of it was seen too, under the renamed name.
    static func replace(_ path: String, with text: String) throws {
        try replaceAtomically(URL(fileURLWithPath: path), with: text)
    }

    /// The watch descriptors the kernel holds for the inotify instance, from fdinfo.
    static func kernelWatches(_ watch: FileChangeWatch) throws -> [String] {
        let info = try String(contentsOfFile: "/proc/self/fdinfo/\(watch.fileDescriptor.rawValue)", encoding: .utf8)
        return info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.map { String($0.split(separator: " ")[1]) }
    }

    @Test("following b after a in one directory keeps its one watch; a no longer counts, b does; nothing followed lets it go")
    func sameDirectory() async throws {
        try await withScratch { directory in
            let (a, b) = (directory.appendingPathComponent("a").path, directory.appendingPathComponent("b").path)
            let watch = try FileChangeWatch()
            watch.follow([a])
            let first = try Self.kernelWatches(watch)
            #expect(first.count == 1)
            try Self.replace(a, with: "1")
            #expect(watch.drain())

            watch.follow([b])
            #expect(try Self.kernelWatches(watch) == first, "the directory's watch was replaced")
            try Self.replace(a, with: "2")
            #expect(!watch.drain(), "a is no longer followed")
            try Self.replace(b, with: "2")
            #expect(watch.drain())

            watch.follow([])
            #expect(try Self.kernelWatches(watch).isEmpty)
            try Self.replace(b, with: "3")
            #expect(!watch.drain())
        }
    }

    @Test("one directory under two names (a symlink) is one watch: both names' files count, and letting one name go keeps it")
    func directoryUnderTwoNames() async throws {
        try await withScratch { directory in
            let real = directory.appendingPathComponent("real")
            let alias = directory.appendingPathComponent("alias")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: alias, withDestinationURL: real)
            let watch = try FileChangeWatch()
            watch.follow([real.appendingPathComponent("a").path, alias.appendingPathComponent("b").path])
            #expect(try Self.kernelWatches(watch).count == 1)
            try Self.replace(real.appendingPathComponent("a").path, with: "1")
            #expect(watch.drain())
            try Self.replace(real.appendingPathComponent("b").path, with: "1")
            #expect(watch.drain())

            watch.follow([real.appendingPathComponent("a").path])
            #expect(try Self.kernelWatches(watch).count == 1, "the other name's going let the directory go")
            try Self.replace(real.appendingPathComponent("a").path, with: "2")
            #expect(watch.drain())
            try Self.replace(real.appendingPathComponent("b").path, with: "2")
            #expect(!watch.drain(), "b is no longer followed")
        }
    }

    @Test("a directory removed is a change; made again, the next follow watches it and its files count again")
    func directoryMadeAgain() async throws {
        try await withScratch { directory in
            let links = directory.appendingPathComponent("links")
            let file = links.appendingPathComponent("2").path
            try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
            let watch = try FileChangeWatch()
            watch.follow([file])
            #expect(try Self.kernelWatches(watch).count == 1)

            try FileManager.default.removeItem(at: links)
            #expect(watch.drain(), "the followed directory went")
            #expect(try Self.kernelWatches(watch).isEmpty)
            try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
            watch.follow([file])
            #expect(try Self.kernelWatches(watch).count == 1)
            try Self.replace(file, with: "CAPTIVE_PORTAL=https://portal.example/\n")
            #expect(watch.drain())
        }
    }

    @Test("a followed file rewritten in place is seen at its close")
    func rewrittenInPlace() async throws {
        try await withScratch { directory in
            let file = directory.appendingPathComponent("state").path
            try Self.replace(file, with: "1")
            let watch = try FileChangeWatch()
            watch.follow([file])
            try write("2", to: URL(fileURLWithPath: file))
            // Seen at the file's last close, which a process spawned meanwhile by another test could delay (`write`).
            var readable = pollfd(fd: watch.fileDescriptor.rawValue, events: Int16(POLLIN), revents: 0)
            #expect(poll(&readable, 1, 5_000) == 1)
            #expect(watch.drain())
        }
    }
}
