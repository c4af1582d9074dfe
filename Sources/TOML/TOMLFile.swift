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
        let bytes: [UInt8]
        do {
            bytes = try SmallFile.read(path, limit: maximumFileSize)
        } catch .unreadable(let reason) {
            throw TOMLError(file: path, line: 0, message: "cannot read it: \(reason)")
        } catch {
            throw TOMLError(file: path, line: 0, message: "larger than \(maximumFileSize >> 20) MiB; not a configuration file")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw TOMLError(file: path, line: 0, message: "not UTF-8 text")
        }
        return try parse(text, file: path)
    }
}
