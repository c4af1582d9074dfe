import ArgumentParser
import ProgramSupport
import ReachctlSupport
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// `reachctl trust`: `status` asks the daemon here; the TLS commands run in
/// reachd-trust, which reachctl becomes for them (`reachd-trust ctl …`), so that
/// reachctl links no TLS code — and with it no full Foundation, which would cost
/// every `reachctl status` 7–8 MB and 50–70 ms (docs/trust.md).
struct TrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: TrustCommandHelp.abstract,
        discussion: TrustCommandHelp.discussion,
        subcommands: [TrustStatusCommand.self, TrustCheck.self, TrustVerify.self, TrustPin.self, TrustDiagnose.self]
    )

    /// Whether `arguments` (without the program's name) name a TLS command;
    /// `Reachctl.main` hands those to reachd-trust before parsing anything.
    static func isTLSCommand(_ arguments: [String]) -> Bool {
        arguments.count >= 2 && arguments[0] == "trust" && TrustCommandHelp.tlsCommands.contains { $0.key == arguments[1] }
    }

    /// Becomes `reachd-trust ctl COMMAND …`, which prints, exits and fails as the
    /// command does; exits 2 when reachd-trust cannot be run.
    static func runInHelper(_ arguments: [String]) -> Never {
        let command = arguments[1]
        guard let helper = Libexec.path(of: "reachd-trust") else {
            let places = Libexec.candidates(for: "reachd-trust").joined(separator: " or ")
            write(line: "reachctl: trust \(command) runs in reachd-trust, which is not installed (looked for \(places))", to: STDERR_FILENO)
            Glibc.exit(2)
        }
        let argv = ["reachd-trust", "ctl"] + arguments.dropFirst()
        var cStrings = argv.map { strdup($0) } + [nil]
        execv(helper, &cStrings)
        write(line: "reachctl: trust \(command): running \(helper): \(Errno(rawValue: errno))", to: STDERR_FILENO)
        Glibc.exit(2)
    }
}

/// The TLS commands as `reachctl trust --help` lists them; they never run here
/// (`Reachctl.main` hands them to reachd-trust, whose help is theirs).
protocol TrustTLSCommandEntry: ParsableCommand {
    static var name: String { get }
}

extension TrustTLSCommandEntry {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: name, abstract: TrustCommandHelp.abstract(of: name))
    }
}

struct TrustCheck: TrustTLSCommandEntry { static let name = "check" }
struct TrustVerify: TrustTLSCommandEntry { static let name = "verify" }
struct TrustPin: TrustTLSCommandEntry { static let name = "pin" }
struct TrustDiagnose: TrustTLSCommandEntry { static let name = "diagnose" }
