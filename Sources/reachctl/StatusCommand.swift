import ArgumentParser
import ReachabilityCore

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the current path."
    )

    @OptionGroup var common: CommonOptions

    func run() throws {
        let options = try common.monitorOptions()
        let path: Path
        do {
            path = try ReachabilityMonitor.path(options: options)
        } catch {
            throw fail("reading the network state", error)
        }
        write(line: common.json ? path.jsonString() : PathText.status(path))
    }
}
