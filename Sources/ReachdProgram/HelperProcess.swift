import CLinuxShim
import SDBus
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// One run of reachd-trust: its stdout and its stderr read as they come, both at
/// once, bounded in size and in time. Reading one pipe to its end before the other
/// deadlocks as soon as the helper fills the other (400 hosts with trust
/// evaluation disabled write 107 KB of warnings to stderr, more than a pipe holds).
///
/// A run ends when the process exits — its pidfd becomes readable — not when its
/// pipes end: a helper that closes them and hangs, or leaves a child holding them,
/// must not keep the loop waiting (the loop never blocks on a child; waitpid is
/// called only once the pidfd says it returns at once).
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
    private let outputDescriptor: OwnedDescriptor
    /// The pipes still open.
    private(set) var descriptors: [OwnedDescriptor]
    /// How the end of a run is seen.
    enum ExitWatch: Sendable, CaseIterable {
        /// Its pidfd becomes readable (pidfd_open); where there is none, polled.
        case pidfd
        /// `waitpid(WNOHANG)` every `exitPollInterval`: where there is no pidfd_open
        /// (valgrind 3.19, which `release/symbol-order.sh` runs reachd under).
        case polled
    }

    /// Readable once the process has exited; nil when its end is polled.
    let exitDescriptor: OwnedDescriptor?
    static let exitPollInterval = Duration.milliseconds(10)
    /// The wait status, once reaped.
    private var waitStatus: Int32?
    private var timedOut = false

    /// Starts `executable` with `arguments`, its stdin /dev/null, its stdout and stderr
    /// on pipes, the signals the daemon blocks unblocked, to be done by `deadline`.
    init(
        _ executable: String, _ arguments: [String], deadline: ContinuousClock.Instant?, exitWatch: ExitWatch = .pidfd
    ) throws(TrustHelper.Failure) {
        let out: (read: OwnedDescriptor, write: OwnedDescriptor)
        let err: (read: OwnedDescriptor, write: OwnedDescriptor)
        do {
            (out, err) = (try Self.pipe(), try Self.pipe())
        } catch {
            throw .init(description: "\(error)")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, out.write.rawValue, STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, err.write.rawValue, STDERR_FILENO)
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
        // The write ends are closed here when init returns (`out` and `err` go): from then on the
        // helper alone holds them, and the reads end when it closes them.
        guard result == 0 else {
            throw .init(description: "\(SystemCallError("starting \(executable)", errno: Errno(rawValue: result)))")
        }
        do {
            exitDescriptor = exitWatch == .pidfd ? try .taking(reachd_pidfd_open(pid), "watching \(executable) (pidfd_open)") : nil
        } catch  where error.errno == .noFunction {
            exitDescriptor = nil
        } catch {
            // Not watchable: not run. SIGKILL ends it at once, so this one wait is short.
            Glibc.kill(pid, SIGKILL)
            _ = retryingOnInterrupt { waitpid(pid, nil, 0) }
            throw .init(description: "\(error)")
        }
        self.pid = pid
        self.deadline = deadline
        outputDescriptor = out.read
        descriptors = [out.read, err.read]
    }

    /// A pipe neither of whose ends is inherited but as dup2 puts it. Only the read end is
    /// non-blocking: the write end becomes the helper's stdout or stderr, where a full pipe must wait.
    private static func pipe() throws(SystemCallError) -> (read: OwnedDescriptor, write: OwnedDescriptor) {
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else { throw SystemCallError("pipe") }
        let owned = (read: OwnedDescriptor(taking: ends[0]), write: OwnedDescriptor(taking: ends[1]))
        for end in [ends[0], ends[1]] { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        return owned
    }

    /// Reads what `descriptor` holds now; lets it go at its end, after `ending` (where the loop stops
    /// watching it; the watch holds it until then, so it is closed after).
    func read(_ descriptor: OwnedDescriptor, ending: (OwnedDescriptor) -> Void = { _ in }) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while descriptors.contains(where: { $0 === descriptor }) {
            let count: Int
            do {
                count = try chunk.withUnsafeMutableBytes { try descriptor.fileDescriptor.read(into: $0) }
            } catch Errno.wouldBlock {
                break
            } catch {
                count = 0
            }
            if count > 0 {
                if descriptor === outputDescriptor { output += chunk[..<count] } else { errors += chunk[..<count] }
                if output.count + errors.count > Self.limit { Glibc.kill(pid, SIGKILL) }
                continue
            }
            closePipe(descriptor, ending: ending)
        }
    }

    private func closePipe(_ descriptor: OwnedDescriptor, ending: (OwnedDescriptor) -> Void) {
        ending(descriptor)
        descriptors.removeAll { $0 === descriptor }
    }

    /// Killed for its deadline already.
    var isExpired: Bool { timedOut }

    /// Past its deadline: killed; it exits.
    func expire() {
        timedOut = true
        Glibc.kill(pid, SIGKILL)
    }

    /// Reaps the process if it has exited (never waits): true once it has. Then what
    /// its pipes still hold is read and they are closed, after `ending` for each.
    @discardableResult
    func reapIfExited(ending: (OwnedDescriptor) -> Void = { _ in }) -> Bool {
        if waitStatus == nil {
            var status: Int32 = 0
            switch retryingOnInterrupt({ waitpid(pid, &status, WNOHANG) }) {
            case pid: waitStatus = status
            // Reaped by someone else (SIGCHLD ignored): gone, its status unknown — exit 255.
            case -1: waitStatus = 255 << 8
            default: return false
            }
        }
        for descriptor in descriptors {
            read(descriptor, ending: ending)
            // Still open: a child of the helper holds it. What the helper wrote is read.
            if descriptors.contains(where: { $0 === descriptor }) { closePipe(descriptor, ending: ending) }
        }
        return true
    }

    /// How it ended; call once `reapIfExited()` is true.
    var outcome: Outcome {
        let status = waitStatus ?? 0
        // WIFEXITED / WEXITSTATUS are macros.
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(
            status: code, output: output, errors: errors, timedOut: timedOut,
            overflowed: output.count + errors.count > Self.limit)
    }

    /// Runs to the end without a loop (at start, before the loop runs): the pipes and the exit polled at once.
    func runToEnd() -> Outcome {
        while !reapIfExited() {
            let remaining = deadline.map { ContinuousClock.now.duration(to: $0) } ?? .seconds(3600)
            if remaining <= .zero, !timedOut { expire() }
            let pipes = descriptors
            var polled = ([exitDescriptor].compactMap { $0 } + pipes).map { pollfd(fd: $0.rawValue, events: Int16(POLLIN), revents: 0) }
            let wait = exitDescriptor == nil ? min(remaining, Self.exitPollInterval) : remaining
            let nanoseconds =
                timedOut ? 1_000_000_000 : max(0, wait.components.seconds * 1_000_000_000 + wait.components.attoseconds / 1_000_000_000)
            // A poll that fails cannot wait for the end: the process is ended instead.
            if retryingOnInterrupt({ reachd_poll(&polled, nfds_t(polled.count), nanoseconds) }) < 0, !timedOut { expire() }
            for (pipe, entry) in zip(pipes, polled.suffix(pipes.count)) where entry.revents != 0 { read(pipe) }
        }
        return outcome
    }
}
