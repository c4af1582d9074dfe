import Foundation

/// Runs openssl (an independent implementation) in a scratch directory.
final class OpenSSLScratch {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("servertrust-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Runs a shell pipeline in the scratch directory and returns its standard output.
    @discardableResult
    func shell(_ command: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "`\(command)` failed"])
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A self-signed certificate for `name.pem` with a key made by `keyOptions`.
    func selfSigned(_ name: String, keyOptions: String) throws {
        try shell("openssl req -x509 -newkey \(keyOptions) -nodes -keyout \(name).key -out \(name).pem -days 1 -subj /CN=\(name).example")
    }

    /// The pin openssl computes: SHA-256 of the DER SubjectPublicKeyInfo, base64.
    func pin(of name: String) throws -> String {
        "sha256/" + (try shell("openssl x509 -in \(name).pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"))
    }
}
