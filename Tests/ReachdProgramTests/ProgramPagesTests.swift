import SystemCalls
import TOML
import Testing

@testable import ReachdProgram

#if canImport(Glibc)
import Glibc
#endif

/// Which pages of its own binary a process may drop (docs/development.md, "Idle memory"),
/// decided from smaps text, and the drop done on this very test process: it keeps running.
@Suite("Program pages: what start-up alone touched leaves the resident set, nothing written")
struct ProgramPagesTests {
    static let binary = ProgramPages.FileIdentity(major: 0xfd, minor: 1, inode: 5_181_440)

    static func mapping(_ range: String, _ perms: String, _ file: String, rss: Int, anonymous: Int, swap: Int = 0) -> String {
        """
        \(range) \(perms) 00000000 \(file) /usr/bin/reachd
        Size:               3968 kB
        Rss:                \(rss) kB
        Pss:                \(rss) kB
        Anonymous:          \(anonymous) kB
        Swap:               \(swap) kB
        VmFlags: rd mr mw me dw sd

        """
    }

    @Test("only the binary's private, read-only mappings with no written page are dropped")
    func selection() {
        let ours = "fd:01 5181440"
        let smaps = [
            Self.mapping("55fe34d9f000-55fe3517f000", "r--p", ours, rss: 324, anonymous: 0), // read-only data, headers
            Self.mapping("55fe3517f000-55fe3616d000", "r-xp", ours, rss: 3812, anonymous: 0), // code
            Self.mapping("55fe3616d000-55fe36229000", "r--p", ours, rss: 752, anonymous: 752), // relocated: RELRO
            Self.mapping("55fe36229000-55fe36552000", "rw-p", ours, rss: 1500, anonymous: 212), // data
            Self.mapping("55fe36552000-55fe36553000", "r-xp", ours, rss: 0, anonymous: 0, swap: 4), // a written page, swapped out
            Self.mapping("55fe36553000-55fe36554000", "r-xp", "fd:01 99", rss: 4, anonymous: 0), // another file
            Self.mapping("55fe36554000-55fe36555000", "r--s", ours, rss: 4, anonymous: 0), // shared
            "7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]\nRss:  8 kB\nAnonymous:  8 kB\n"
        ].joined()
        let found = ProgramPages.unmodified(in: smaps, of: Self.binary)
        #expect(found.map(\.start) == [0x55fe_34d9_f000, 0x55fe_3517_f000])
        #expect(found.map(\.end) == [0x55fe_3517_f000, 0x55fe_3616_d000])
        #expect(found.map(\.residentKiB) == [324, 3812])
        // A debugger's breakpoint is a written page of the code: that mapping is kept whole.
        let breakpoint = Self.mapping("55fe3517f000-55fe3616d000", "r-xp", ours, rss: 3812, anonymous: 4)
        #expect(ProgramPages.unmodified(in: breakpoint, of: Self.binary).isEmpty)
    }

    @Test("this test process drops its own code's pages as reachd does, and goes on running it")
    func releaseInThisProcess() throws {
        func ownSmaps() throws -> String { String(decoding: try SmallFile.read("/proc/self/smaps", limit: 16 << 20), as: UTF8.self) }
        func residentFileKiB() throws -> Int {
            let status = String(decoding: try SmallFile.read("/proc/self/status", limit: 1 << 20), as: UTF8.self)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("RssFile:") })
            return try #require(Int(line.split(separator: " ")[1]))
        }
        let executable = try ProgramPages.FileIdentity.executable()
        let candidates = ProgramPages.unmodified(in: try ownSmaps(), of: executable)
        // The test binary's code at least; never a writable mapping.
        #expect(!candidates.isEmpty)
        let before = try residentFileKiB()
        let released = try Reachd.releaseStartupPages()
        let after = try residentFileKiB()
        #expect(released > 0)
        // Other tests run meanwhile and map pages back: most of what was dropped stays out.
        #expect(after < before, "RssFile \(before) → \(after) KiB, \(released) KiB released")
        // And everything still runs: code and read-only data come back from the page cache.
        let afterwards = try ownSmaps()
        #expect(ProgramPages.unmodified(in: afterwards, of: executable).count == candidates.count)
    }
}
