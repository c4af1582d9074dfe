import ArgumentParser
import ReachabilityClient
import ReachctlSupport

struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Ask the daemon to re-read its config (root only).",
        discussion:
            "Exits 0 when the daemon took the new config, 1 when it refused (not root, or an invalid config: the old one stays in force)."
    )

    @Option(help: ArgumentHelp("Where the daemon is: system, session, or a D-Bus address or socket path.", valueName: "bus"))
    var bus: String?

    func run() throws {
        let client = ReachabilityClient(endpoint: bus.map(ReachabilityClient.Endpoint.init) ?? .automatic)
        do {
            try client.blocking.reload()
        } catch {
            throw fail("reload", error)
        }
    }
}
