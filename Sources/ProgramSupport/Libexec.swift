#if canImport(Glibc)
import Glibc
#endif

/// Where the project's helper programs are: beside the running program (a build
/// directory) or in `../libexec` from it (an installation: /usr/bin → /usr/libexec).
public enum Libexec {
    /// The path of the executable helper `name`, or nil when it is in neither place.
    public static func path(of name: String) -> String? {
        candidates(for: name).first { access($0, X_OK) == 0 }
    }

    /// Where `name` is looked for, in order: for messages that say where it was not.
    public static func candidates(for name: String) -> [String] {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return [] }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let directory = String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)])
        return ["\(directory)/\(name)", "\(directory)/../libexec/\(name)"]
    }
}
