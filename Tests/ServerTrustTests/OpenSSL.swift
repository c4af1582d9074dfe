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

    /// Starts a long-running openssl command (a server) in the scratch directory.
    /// Stop it with `stop(_:)`.
    func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        process.standardInput = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Starts an openssl server on TCP `port` and waits until it listens, looking at
    /// the socket table rather than connecting: `openssl ocsp` serves one connection
    /// at a time and hangs on one that sends nothing. The port was free when chosen,
    /// but another test's connection can hold it for a moment (the suites run in
    /// parallel): a server that exits without listening is started again.
    func startListening(_ arguments: [String], port: Int) async throws -> Process {
        for _ in 0..<20 {
            let server = try start(arguments)
            for _ in 0..<100 where server.isRunning {
                if let sockets = try? shell("ss -Hltn 'sport = :\(port)'"), !sockets.isEmpty { return server }
                try await Task.sleep(for: .milliseconds(50))
            }
            stop(server)
            try await Task.sleep(for: .milliseconds(250))
        }
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "nothing listens on port \(port)"])
    }

    /// SIGKILL: a child spawned from a pool thread may inherit a mask that blocks SIGTERM.
    func stop(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A self-signed certificate for `name.pem` with a key made by `keyOptions`.
    func selfSigned(_ name: String, keyOptions: String) throws {
        try shell("openssl req -x509 -newkey \(keyOptions) -nodes -keyout \(name).key -out \(name).pem -days 1 -subj /CN=\(name).example")
    }

    /// The pin openssl computes: SHA-256 of the DER SubjectPublicKeyInfo, base64.
    func pin(of name: String) throws -> String {
        "sha256/"
            + (try shell(
                "openssl x509 -in \(name).pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"))
    }
}
