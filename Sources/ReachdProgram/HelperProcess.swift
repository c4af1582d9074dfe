import SystemCalls
import ReachabilityBus
#if canImport(Glibc)
import Glibc
#endif

/// One run of reachd-trust: its stdout and its stderr read as they come, both at
/// once, bounded in size and in time. Reading one pipe to its end before the other
/// deadlocks as soon as the helper fills the other (400 hosts with trust
/// evaluation disabled write 107 KB of warnings to stderr, more than a pipe holds).
final class HelperProcess {
    /// How a run ended.
    struct Outcome {
        /// The exit status (128 + the signal when killed).
        var status: Int32
        var output: [UInt8]
        var errors: [UInt8]
        /// Still running at its deadline: killed.
        var timedOut = false
        /// Wrote more than `limit`: killed.
        var overflowed = false
    }

    /// More than any answer (a round's results and new reports for hundreds of
    /// hosts): a helper that writes more is broken, and is not read further.
    static let limit = 16 << 20

    let pid: pid_t
    let deadline: ContinuousClock.Instant?
    private var output: [UInt8] = []
    private var errors: [UInt8] = []
    private let outputDescriptor: Int32
    /// The pipes still open.
    private(set) var descriptors: [Int32]
    private var timedOut = false

    /// Starts `executable` with `arguments`, its stdin /dev/null, its stdout and stderr
    /// on pipes, the signals the daemon blocks unblocked, to be done by `deadline`.
    init(_ executable: String, _ arguments: [String], deadline: ContinuousClock.Instant?) throws(TrustHelper.Failure) {
        var out: [Int32] = [0, 0]
        var err: [Int32] = [0, 0]
        guard pipe(&out) == 0 else { throw .init(description: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&err) == 0 else {
            let code = errno
            close(out[0]); close(out[1])
            throw .init(description: "pipe: \(String(cString: strerror(code)))")
        }
        for end in [out[0], err[0]] {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(out[1])
        close(err[1])
        guard result == 0 else {
            close(out[0])
            close(err[0])
            throw .init(description: "starting \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        self.deadline = deadline
        outputDescriptor = out[0]
        descriptors = [out[0], err[0]]
    }

    deinit {
        descriptors.forEach { close($0) }
    }

    /// Reads what `descriptor` holds now; closes it at its end, after `ending` (where the loop stops
    /// watching it: a watch must never outlive its descriptor, whose number the next pipe reuses).
    /// True once both are closed.
    @discardableResult
    func read(_ descriptor: Int32, ending: (Int32) -> Void = { _ in }) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while descriptors.contains(descriptor) {
            let count: Int
            do {
                count = try chunk.withUnsafeMutableBytes { try FileDescriptor(rawValue: descriptor).read(into: $0) }
            } catch Errno.wouldBlock {
                break
            } catch {
                count = 0
            }
            if count > 0 {
                if descriptor == outputDescriptor { output += chunk[..<count] } else { errors += chunk[..<count] }
                if output.count + errors.count > Self.limit { Glibc.kill(pid, SIGKILL) }
                continue
            }
            ending(descriptor)
            close(descriptor)
            descriptors.removeAll { $0 == descriptor }
        }
        return descriptors.isEmpty
    }

    /// Killed for its deadline already.
    var isExpired: Bool { timedOut }

    /// Past its deadline: killed; its pipes end.
    func expire() {
        timedOut = true
        Glibc.kill(pid, SIGKILL)
    }

    /// Waits for the exit (the pipes have ended, so it has exited or is about to).
    func reap() -> Outcome {
        var status: Int32 = 0
        _ = retryingOnInterrupt { waitpid(pid, &status, 0) }
        // WIFEXITED / WEXITSTATUS are macros.
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: code, output: output, errors: errors, timedOut: timedOut,
                       overflowed: output.count + errors.count > Self.limit)
    }

    /// Runs to the end without a loop (at start, before the loop runs): both pipes polled at once.
    func runToEnd() -> Outcome {
        while !descriptors.isEmpty {
            let remaining = deadline.map { ContinuousClock.now.duration(to: $0) } ?? .seconds(3600)
            if remaining <= .zero, !timedOut { expire() }
            var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let milliseconds = timedOut ? 1000 : Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            if retryingOnInterrupt({ poll(&polled, nfds_t(polled.count), milliseconds) }) < 0 { break }
            for entry in polled where entry.revents != 0 { read(entry.fd) }
        }
        return reap()
    }
}
