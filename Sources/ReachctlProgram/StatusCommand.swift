import ArgumentParser
import ReachctlSupport
import ReachabilityCore

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the current path."
    )

    @OptionGroup var common: CommonOptions

    func run() throws {
        let path = try common.currentPath()
        write(line: common.json ? path.jsonString() : PathText.status(path))
    }
}
