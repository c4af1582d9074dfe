import FoundationEssentials
import Libexec
import ReachabilityBus
import TrustHelperMessages
#if canImport(Glibc)
import Glibc
#endif

/// reachd-trust, the process that does the TLS work: it validates the `[trust]`
/// table and runs each round of checks. Keeping swift-nio-ssl, swift-certificates
/// and swift-crypto (which brings full Foundation) out of the daemon keeps the
/// daemon's resident memory at a third.
struct TrustHelper {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let executable: String

    /// Beside the daemon's own binary, or in ../libexec.
    static func locate() -> TrustHelper? {
        Libexec.path(of: "reachd-trust").map(TrustHelper.init(executable:))
    }

    /// Validates the `[trust]` table of `file` (blocking: at start and on reload).
    func checkConfig(_ file: String) throws(Failure) -> TrustConfigurationSummary {
        let (pid, output, errors) = try spawn(["check-config", file], captureErrors: true)
        let data = Self.readAll(output)
        let message = String(decoding: Self.readAll(errors!), as: UTF8.self)
        let status = Self.wait(pid)
        guard status == 0 else {
            // "reachd-trust: FILE:LINE: reason" → "FILE:LINE: reason"
            let reason = message.split(separator: "\n").last.map { $0.hasPrefix("reachd-trust: ") ? $0.dropFirst(14) : $0 }
            throw Failure(description: reason.map(String.init) ?? "reachd-trust exited \(status)")
        }
        // Warnings (a host with trust evaluation disabled) go where the daemon's go.
        for line in message.split(separator: "\n") { Log.warning(String(line)) }
        guard let summary = try? JSONDecoder().decode(TrustConfigurationSummary.self, from: Data(data)) else {
            throw Failure(description: "reachd-trust answered nothing usable")
        }
        return summary
    }

    /// More than any answer (a round's results and new reports for hundreds of
    /// hosts): a helper that writes more is broken, and is not read further.
    static let answerLimit = 16 << 20

    /// Starts a round; `completion` runs on the loop with its outcome.
    func startCheck(_ file: String, path: [String], on loop: EventLoop,
                    completion: @escaping (Result<TrustRound, Failure>) -> Void) throws(Failure) {
        try start(["check", file] + path, on: loop, completion: completion)
    }

    /// Starts a delivery pass over the report outbox; `completion` runs on the loop.
    func startDelivery(_ file: String, on loop: EventLoop,
                       completion: @escaping (Result<TrustDelivery, Failure>) -> Void) throws(Failure) {
        try start(["deliver", file], on: loop, completion: completion)
    }

    /// Runs the helper without blocking the loop; its one JSON line is decoded when it exits.
    private func start<Answer: Decodable>(_ arguments: [String], on loop: EventLoop,
                                          completion: @escaping (Result<Answer, Failure>) -> Void) throws(Failure) {
        let (pid, output, _) = try spawn(arguments, captureErrors: false)
        _ = fcntl(output, F_SETFL, O_NONBLOCK)
        var data: [UInt8] = []
        var watch: EventLoop.Watch?
        do {
            watch = try loop.onReadable(output) {
                var chunk = [UInt8](repeating: 0, count: 65536)
                while data.count <= Self.answerLimit {
                    let count = read(output, &chunk, chunk.count)
                    if count > 0 { data += chunk[..<count]; continue }
                    if count < 0 && (errno == EAGAIN || errno == EINTR) { return }
                    break  // end of output
                }
                watch?.cancel()
                close(output)
                if data.count > Self.answerLimit { kill(pid, SIGKILL) }
                let status = Self.wait(pid)
                if status == 0, data.count <= Self.answerLimit, let answer = try? JSONDecoder().decode(Answer.self, from: Data(data)) {
                    completion(.success(answer))
                } else {
                    completion(.failure(Failure(description: "reachd-trust \(arguments[0]) exited \(status) without a result")))
                }
            }
        } catch {
            close(output)
            _ = Self.wait(pid)
            throw Failure(description: "\(error)")
        }
    }

    /// Runs the helper with its stdout on a pipe (its stderr too when asked;
    /// otherwise its warnings go where the daemon's go), with the signals the
    /// daemon blocks unblocked.
    private func spawn(_ arguments: [String], captureErrors: Bool) throws(Failure) -> (pid_t, Int32, Int32?) {
        var ends: [Int32] = [0, 0]
        var errorEnds: [Int32] = [-1, -1]
        guard pipe(&ends) == 0, !captureErrors || pipe(&errorEnds) == 0 else {
            throw Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        if captureErrors { _ = fcntl(errorEnds[0], F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO)
        if captureErrors { posix_spawn_file_actions_adddup2(&actions, errorEnds[1], STDERR_FILENO) }
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
        close(ends[1])
        if captureErrors { close(errorEnds[1]) }
        guard result == 0 else {
            close(ends[0])
            if captureErrors { close(errorEnds[0]) }
            throw Failure(description: "starting \(executable): \(String(cString: strerror(result)))")
        }
        return (pid, ends[0], captureErrors ? errorEnds[0] : nil)
    }

    /// Reads to the end and closes (small outputs: the config check's).
    private static func readAll(_ descriptor: Int32) -> [UInt8] {
        defer { close(descriptor) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count > 0 { data += chunk[..<count] } else if count < 0 && errno == EINTR { continue } else { return data }
        }
    }

    private static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS are macros.
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
