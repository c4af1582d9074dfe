import ArgumentParser
import SystemPackage
import TOML

#if canImport(Glibc)
import Glibc
#endif

// reachctl's one output and error format, shared by the commands in reachctl and
// by `reachctl trust`'s TLS commands, which run in reachd-trust.

/// Prints `reachctl: what: why` to stderr, the one error format of the CLI.
public func fail(_ what: String, _ why: Any, exitCode: Int32 = 1) -> ExitCode {
    write(line: "reachctl: \(what): \(why)", to: STDERR_FILENO)
    return ExitCode(exitCode)
}

/// A config file that cannot be used: `reachctl: file:line: reason` when the
/// error names the file itself, as the config reader's do.
public func fail(reading file: String, _ error: any Error) -> ExitCode {
    guard error is TOMLError else { return fail("reading \(file)", error) }
    write(line: "reachctl: \(error)", to: STDERR_FILENO)
    return ExitCode(1)
}

/// Writes one line with a single unbuffered write: a reader on a pipe sees each
/// line of `watch` as it happens, and lines never interleave.
public func write(line: String, to descriptor: Int32 = STDOUT_FILENO) {
    _ = try? FileDescriptor(rawValue: descriptor).writeAll((line + "\n").utf8)
}

/// Writes `line`, UTF-8 that already ends with its newline (`Path.jsonLine()`), with
/// one write as `write(line:to:)` does, without making it a `String` first.
public func write(utf8Line line: [UInt8], to descriptor: Int32 = STDOUT_FILENO) {
    _ = try? FileDescriptor(rawValue: descriptor).writeAll(line)
}
