import ArgumentParser
import ReachctlSupport
import ServerTrust

struct TrustCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: TrustCommandHelp.abstract(of: "check"),
        discussion:
            "Exits 0 when trusted (also: pins expired, report-only mismatch), 1 when not trusted, 2 when the server could not be reached."
    )

    @Argument(help: ArgumentHelp("The server: HOST[:PORT] (default port: the config's, else 443).", valueName: "host[:port]"))
    var server: ServerAddress

    @Option(
        help: ArgumentHelp("Dial this address instead of resolving the name; SNI and the name check use the name.", valueName: "address"))
    var connect: String?

    @Option(help: ArgumentHelp("Connect and handshake timeout, each (default: the config's, else 5).", valueName: "seconds"))
    var timeout: Double?

    @OptionGroup var policy: TrustPolicyOptions

    func run() async throws {
        let checker = try policy.checker(for: server.host, timeout: timeout)
        let result = await checker.check(server.host, port: server.port, connectingTo: connect)
        if policy.json { try writeJSON(result) } else { write(line: describe(result)) }
        if result.verdict == .unreachable { throw ExitCode(2) }
        if !result.allowsConnection { throw ExitCode(1) }
    }
}
