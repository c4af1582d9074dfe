import Foundation
import Synchronization

/// The outcome of running a program to completion.
public struct CommandResult: Sendable {
    public var status: Int32
    public var output: String
    public var error: String
}

public struct CommandFailure: Error, CustomStringConvertible {
    public var command: [String]
    public var result: CommandResult
    public var description: String {
        "`\(command.joined(separator: " "))` exited \(result.status): \(result.error)\(result.output)"
    }
}

/// Runs a program (looked up in PATH) and waits for it, collecting its output.
@discardableResult
public func run(_ arguments: [String], check: Bool = true, input: String? = nil) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    let inputPipe = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : inputPipe
    try process.run()
    if let input {
        inputPipe.fileHandleForWriting.write(Data(input.utf8))
        try inputPipe.fileHandleForWriting.close()
    }
    // Read both pipes before waiting, so a chatty program cannot block on a full pipe. Standard
    // error on a queue of its own: the global queue's threads are the ones Swift's tasks run on.
    let errorData = Mutex(Data())
    let group = DispatchGroup()
    group.enter()
    DispatchQueue(label: "io.reachd.tests.stderr").async {
        let data = error.fileHandleForReading.readDataToEndOfFile()
        errorData.withLock { $0 = data }
        group.leave()
    }
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    let result = CommandResult(
        status: process.terminationStatus,
        output: String(decoding: outputData, as: UTF8.self),
        error: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
    if check && result.status != 0 { throw CommandFailure(command: arguments, result: result) }
    return result
}
