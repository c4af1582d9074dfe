import ArgumentParser
import ReachabilityCore
import ReachctlSupport

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the current path."
    )

    @OptionGroup var common: CommonOptions

    @Flag(help: "Print every interface instead of the path: one line each (--json: one array).")
    var interfaces = false

    func run() throws {
        if interfaces {
            let inventory = try common.interfaces()
            if common.json { return write(line: InterfaceChange.jsonArray(inventory)) }
            for entry in inventory { write(line: PathText.interface(entry)) }
            return
        }
        let path = try common.currentPath()
        write(line: common.json ? path.jsonString() : PathText.status(path))
    }
}
