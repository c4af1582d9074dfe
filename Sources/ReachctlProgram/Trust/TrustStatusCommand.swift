import ArgumentParser
import FoundationEssentials
import ReachabilityClient
import ReachctlSupport

struct TrustStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the daemon's latest verdict per configured host."
    )

    @Option(help: ArgumentHelp("Where the daemon is: system, session, or a D-Bus address or socket path.", valueName: "bus"))
    var bus: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let client = ReachabilityClient(endpoint: bus.map(ReachabilityClient.Endpoint.init) ?? .automatic)
        let document: String
        do {
            document = try client.blocking.trustStatusDocument()
        } catch {
            throw fail("asking the daemon for the trust status", error)
        }
        if json { return write(line: document) }
        guard let status = try? TrustStatus(json: document) else {
            throw fail("reading the daemon's trust status", "it does not parse")
        }
        write(line: "trust: \(status.overall.rawValue)")
        for host in status.hosts {
            write(line: "  \(host.host):\(host.port)  \(host.verdict)\(host.enforced ? "" : " (report-only)")  \(host.reason)")
        }
        if status.reportsPending > 0 {
            write(line: "reports: \(status.reportsPending) waiting for their collectors (retried with back-off and on every path change)")
        }
    }
}
