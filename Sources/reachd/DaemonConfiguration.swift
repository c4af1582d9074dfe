import FoundationEssentials
import ReachabilityCore
import ServerTrust
#if canImport(Glibc)
import Glibc
#endif

/// Everything reachd reads from its config file: the `[monitor]` and `[trust]` tables.
struct DaemonConfiguration {
    var monitor = MonitorOptions()
    var trust = TrustConfiguration()

    /// A missing file means defaults; anything else wrong is an error naming `file:line`.
    static func load(_ file: String) throws -> DaemonConfiguration {
        guard access(file, F_OK) == 0 else { return DaemonConfiguration() }
        return DaemonConfiguration(monitor: try MonitorOptions.load(contentsOf: file),
                                   trust: try TrustConfiguration.load(contentsOf: file))
    }
}
