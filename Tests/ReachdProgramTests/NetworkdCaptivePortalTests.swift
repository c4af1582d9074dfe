import Foundation
import NamespaceTesting
import SDBus
import Testing

@testable import ReachdProgram

/// networkd's captive portal of the path's link, followed as the path goes and comes back
/// (docs/connectivity.md): with no path the last link's file stays followed, so the path's
/// return by the same link needs no read, and what networkd wrote meanwhile is known.
@Suite("networkd's link state: the last link's file followed while there is no path")
struct NetworkdCaptivePortalTests {
    /// A link state file as networkd writes it: a new file renamed over the old one.
    static func write(_ directory: URL, link: Int, portal: String) throws {
        try replaceAtomically(
            directory.appendingPathComponent("\(link)"),
            with: "# This is private data. Do not parse.\nADMIN_STATE=configured\nCAPTIVE_PORTAL=\(portal)\n")
    }

    /// Runs `steps` on the loop one after the other, 20 ms apart: what a step wrote is
    /// handled before the next (inotify queues an event as the rename returns, so the
    /// watch is readable before the loop waits). sd-event runs a loop once.
    static func run(_ loop: EventLoop, _ steps: [() throws -> Void]) throws {
        var remaining = steps
        var timer: EventLoop.Timer?
        timer = try loop.timer {
            guard !remaining.isEmpty else { return loop.exit(0) }
            do { try remaining.removeFirst()() } catch { Issue.record(error) }
            timer?.arm(after: .milliseconds(20))
        }
        timer?.arm(after: .zero)
        _ = try loop.run()
    }

    @Test("a path that goes and comes back by its link keeps its URI, what networkd wrote meanwhile included; another link's is read")
    func pathGoesAndComesBack() async throws {
        try await withScratch { links in
            try Self.write(links, link: 2, portal: "https://portal.example/a")
            let loop = try EventLoop()
            var changes = 0
            let networkd = NetworkdCaptivePortal(loop: loop) { changes += 1 }
            try networkd.configure(directory: links.path)

            try Self.run(
                loop,
                [
                    {
                        networkd.follow(2)
                        #expect(networkd.uri == "https://portal.example/a")
                        networkd.follow(nil)
                        #expect(networkd.uri == nil, "no path, no portal")
                        try Self.write(links, link: 2, portal: "https://portal.example/b")
                    },
                    {
                        #expect(changes == 0, "nothing the path has changed")
                        networkd.follow(2)
                        #expect(networkd.uri == "https://portal.example/b", "written while the path was away")
                        // The path's link rewritten: the daemon hears of it.
                        try Self.write(links, link: 2, portal: "https://portal.example/c")
                    },
                    {
                        #expect(changes == 1 && networkd.uri == "https://portal.example/c")
                        // Another link: its own file, and one written later is seen.
                        networkd.follow(3)
                        #expect(networkd.uri == nil)
                        try Self.write(links, link: 3, portal: "https://portal.example/d")
                    },
                    { #expect(changes == 2 && networkd.uri == "https://portal.example/d") }
                ])
        }
    }

    @Test("a state directory made after start is read when the path comes back by the same link")
    func directoryMadeLater() async throws {
        try await withScratch { scratch in
            let links = scratch.appendingPathComponent("links")
            let loop = try EventLoop()
            let networkd = NetworkdCaptivePortal(loop: loop) {}
            try networkd.configure(directory: links.path)
            networkd.follow(2)
            #expect(networkd.uri == nil)

            try FileManager.default.createDirectory(at: links, withIntermediateDirectories: true)
            try Self.write(links, link: 2, portal: "https://portal.example/late")
            networkd.follow(nil)
            networkd.follow(2)
            #expect(networkd.uri == "https://portal.example/late")
        }
    }
}
