import ArgumentParser
import ReachabilityClient
import ReachabilityCore
import ReachctlSupport

struct RouteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "route",
        abstract: "Print the kernel's path to one host name or address.",
        discussion: "Exits 1 when the destination has no usable path."
    )

    @Argument(help: "A host name, or an IPv4 or IPv6 address.")
    var destination: String

    @OptionGroup var common: CommonOptions

    func run() throws {
        let path: Path
        do {
            if let client = common.client, let answered = try? client.blocking.route(to: destination, timeout: .seconds(25)) {
                path = answered
            } else {
                // A command line waits for the resolver as long as it would wait for the daemon (25 s), not an app's 5 s.
                path = try ReachabilityMonitor.path(to: destination, options: try common.monitorOptions(), resolutionTimeout: .seconds(25))
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail("looking up the route to \(destination)", error)
        }
        write(line: common.json ? path.jsonString() : PathText.route(path))
        if !path.status.isReachable { throw ExitCode(1) }
    }
}
