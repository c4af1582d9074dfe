import ReachctlProgram
import ReachdProgram
import ReachdTrustProgram

#if canImport(Glibc)
import Glibc
#endif

// The installed binary: /usr/bin/reachd, with /usr/bin/reachctl and
// /usr/libexec/reachd-trust symbolic links to it. Three programs, each still run
// as a process of its own (reachd execs reachd-trust for every TLS round), chosen
// by the name they are run under; one copy of the Swift runtime,
// FoundationEssentials and everything they share on disk (BENCHMARKS.md §11).
let name = CommandLine.arguments.first?.split(separator: "/").last.map(String.init) ?? ""
switch name {
case "reachd":
    Reachd.main()
case "reachctl":
    await reachctlMain()
case "reachd-trust":
    await ReachdTrust.main()
default:
    var message = "\(name): run this as reachd, reachctl or reachd-trust (a link named so)\n"
    message.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(64)
}
