import ArgumentParser
import FoundationEssentials
import ReachctlSupport
import ServerTrust
import X509

struct TrustVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: TrustCommandHelp.abstract(of: "verify"),
        discussion:
            "CHAIN_FILE holds the chain leaf first, PEM (one or more blocks) or DER — for example the served chain of a pin-failure report. Exits 0 when trusted, 1 when not."
    )

    @Argument(help: ArgumentHelp("The chain, leaf first.", valueName: "chain-file"))
    var chainFile: String

    @Option(
        help: ArgumentHelp("The name or IP address the chain must be valid for; without it the name is not checked.", valueName: "name"))
    var host: String?

    @Option(help: ArgumentHelp("When to judge at: ISO 8601 (2026-11-18T12:00:00Z or 2026-11-18); default now.", valueName: "time"))
    var at: String?

    @OptionGroup var policy: TrustPolicyOptions

    func run() async throws {
        let chain: [Certificate]
        do { chain = try CertificateLoader.certificates(inFile: chainFile) } catch { throw fail("reading the chain", error) }
        var time: Date?
        if let at {
            let text = at.contains("T") ? at : at + "T00:00:00Z"
            guard let parsed = try? Date(text, strategy: .iso8601) else {
                throw fail("--at", "\"\(at)\" is not an ISO 8601 time such as 2026-11-18T12:00:00Z")
            }
            time = parsed
        }
        let result = try await policy.checker(for: host).verify(chain, host: host, at: time)
        if policy.json { try writeJSON(result) } else { write(line: describe(result)) }
        if !result.allowsConnection { throw ExitCode(1) }
    }
}
