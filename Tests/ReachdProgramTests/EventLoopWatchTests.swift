import CLinuxShim
import SDBus
import SystemCalls
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A watch holds what owns its descriptor: sd-event never polls a descriptor that was
/// closed, nor another given the same number, and a watch let go is called no more.
@Suite("Event loop watches")
struct EventLoopWatchTests {
    /// A pipe, each end owned.
    static func pipe() throws -> (read: OwnedDescriptor, write: OwnedDescriptor, readNumber: Int32) {
        var ends: [Int32] = [0, 0]
        // Close-on-exec: a program another suite starts meanwhile would otherwise hold the read end open.
        #expect(reachd_pipe(&ends) == 0)
        return (OwnedDescriptor(taking: ends[0]), OwnedDescriptor(taking: ends[1]), ends[0])
    }

    /// Whether the pipe's read end is still open anywhere, asked of its write end: the number
    /// of a closed read end may already be another suite's descriptor (they run in parallel).
    static func isReadEndOpen(_ write: OwnedDescriptor) -> Bool {
        var entry = pollfd(fd: write.rawValue, events: Int16(POLLOUT), revents: 0)
        _ = poll(&entry, 1, 0)
        return entry.revents & Int16(POLLERR) == 0
    }

    /// Whether the read end is closed within a second: a program another suite is starting
    /// holds every descriptor from its fork until its exec closes the close-on-exec ones
    /// (seen once in a full run); a watch that kept the end would keep it for good.
    static func isReadEndClosedSoon(_ write: OwnedDescriptor) -> Bool {
        for _ in 0..<100 {
            if !isReadEndOpen(write) { return true }
            usleep(10_000)
        }
        return false
    }

    @Test("the descriptor stays open while its watch holds it, though its owner let it go; it closes when the watch goes")
    func descriptorOutlivesNoWatch() throws {
        let loop = try EventLoop()
        var (read, write, _) = try Self.pipe() as (OwnedDescriptor?, OwnedDescriptor, Int32)
        var watch: EventLoop.Watch? = try loop.onReadable(read!) {}
        read = nil
        #expect(Self.isReadEndOpen(write), "the watch holds it")
        watch = nil
        #expect(Self.isReadEndClosedSoon(write), "closed once the watch went")
        withExtendedLifetime(watch) {}

        // Cancelled rather than let go: the same.
        var (again, againWrite, _) = try Self.pipe() as (OwnedDescriptor?, OwnedDescriptor, Int32)
        let cancelled = try loop.onReadable(again!) {}
        again = nil
        #expect(Self.isReadEndOpen(againWrite))
        cancelled.cancel()
        #expect(Self.isReadEndClosedSoon(againWrite))
    }

    @Test("a watch let go from its own callback is called no more; another on the same loop still is")
    func letGoInItsCallback() throws {
        let loop = try EventLoop()
        let first = try Self.pipe(), second = try Self.pipe()
        var calls = 0, otherCalls = 0
        var watch: EventLoop.Watch?
        watch = try loop.onReadable(first.read) {
            calls += 1
            watch = nil
        }
        let other = try loop.onReadable(second.read) {
            otherCalls += 1
            var byte: UInt8 = 0
            _ = Glibc.read(second.readNumber, &byte, 1)
        }
        var rounds = 0
        var timer: EventLoop.Timer?
        timer = try loop.timer {
            rounds += 1
            // The first pipe stays readable (nothing reads it): a live watch would be called every iteration.
            _ = try? first.write.fileDescriptor.writeAll([1])
            _ = try? second.write.fileDescriptor.writeAll([1])
            if rounds == 5 { loop.exit(0) } else { timer?.arm(after: .milliseconds(2)) }
        }
        timer?.arm(after: .milliseconds(1))
        _ = try loop.run()
        #expect(calls == 1 && watch == nil)
        #expect(otherCalls >= 4, "\(otherCalls)")
        withExtendedLifetime(other) {}
    }
}
