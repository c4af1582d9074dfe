import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Where the daemon's private socket is, as the daemon and its clients both find it.
package enum PrivateSocketPlace {
    /// The socket's default place (docs/api.md, "Where the daemon is"): the service's RuntimeDirectory
    /// under systemd, `/run/reachd/bus` as root, else `$XDG_RUNTIME_DIR/reachd/bus`,
    /// else `/tmp/reachd-$UID/bus`.
    package static var defaultPath: String {
        func environment(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let runtime = environment("RUNTIME_DIRECTORY") { return "\(runtime.split(separator: ":").first ?? "/run/reachd")/bus" }
        if getuid() == 0 { return "/run/reachd/bus" }
        if let runtime = environment("XDG_RUNTIME_DIR") { return "\(runtime)/reachd/bus" }
        return "\(fallbackDirectory)/bus"
    }

    /// The last resort of `defaultPath`, in `/tmp`.
    package static var fallbackDirectory: String { "/tmp/reachd-\(getuid())" }

    /// Refuses the `/tmp/reachd-$UID` fallback when it is not the user's own. Anyone
    /// may create it first: a daemon serving there, or a client connecting there,
    /// would share it with whoever did — who could put a socket of its own in it
    /// and answer for reachd. Other paths are the caller's choice.
    package static func verifyOwnDirectory(of socketPath: String) throws(SystemCallError) {
        let directory = fallbackDirectory
        guard socketPath == "\(directory)/bus" else { return }
        var status = stat()
        guard lstat(directory, &status) == 0 else { throw SystemCallError("checking \(directory)") }
        let user = geteuid()
        if status.st_mode & S_IFMT != S_IFDIR {
            throw SystemCallError(
                "\(directory) is not a directory (a link or a file someone else may have put there): refusing it",
                errno: Errno(rawValue: ENOTDIR))
        }
        if status.st_uid != user {
            throw SystemCallError(
                "\(directory) belongs to uid \(status.st_uid), not to uid \(user): refusing a socket directory another user created (remove it, or use --socket)",
                errno: Errno(rawValue: EPERM))
        }
        if status.st_mode & 0o022 != 0 {
            throw SystemCallError(
                "\(directory) is writable by other users (mode \(String(status.st_mode & 0o777, radix: 8))): refusing it",
                errno: Errno(rawValue: EPERM))
        }
    }
}
