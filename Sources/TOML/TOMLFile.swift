#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension TOML {
    /// More than any configuration file needs; stops `/dev/zero` or a log file
    /// named by mistake from being read into memory whole.
    public static let maximumFileSize = 1 << 20

    /// Reads and parses the file at `path`.
    ///
    /// - Throws: `TOMLError` naming the file and the system's reason when it cannot be
    ///   read (line 0: `file: cannot read it: Permission denied`), when it is not UTF-8
    ///   or too large; otherwise as ``parse(_:file:)``.
    public static func parse(contentsOfFile path: String) throws(TOMLError) -> TOMLTable {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw unreadable(path) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw unreadable(path)
            }
            if count == 0 { break }
            bytes += chunk[..<count]
            guard bytes.count <= maximumFileSize else {
                throw TOMLError(file: path, line: 0, message: "larger than \(maximumFileSize >> 20) MiB; not a configuration file")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw TOMLError(file: path, line: 0, message: "not UTF-8 text")
        }
        return try parse(text, file: path)
    }

    private static func unreadable(_ path: String) -> TOMLError {
        TOMLError(file: path, line: 0, message: "cannot read it: \(String(cString: strerror(errno)))")
    }
}
