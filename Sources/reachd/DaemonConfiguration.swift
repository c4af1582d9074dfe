import FoundationEssentials
import ReachabilityCore
import TOML
import TrustHelperMessages
#if canImport(Glibc)
import Glibc
#endif

/// Everything reachd reads from its config file: the `[monitor]` table, and
/// what it needs of `[trust]` (validated by reachd-trust, which owns that table).
struct DaemonConfiguration {
    var monitor = MonitorOptions()
    var trust = TrustConfigurationSummary.none

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A missing file means defaults; anything else wrong is an error naming `file:line`.
    static func load(_ file: String, helper: TrustHelper?) throws -> DaemonConfiguration {
        guard access(file, F_OK) == 0 else { return DaemonConfiguration() }
        let monitor = try MonitorOptions.load(contentsOf: file)
        if let helper { return DaemonConfiguration(monitor: monitor, trust: try helper.checkConfig(file)) }
        // Without the helper a config may still go without trust checks.
        let document = try TOML.parse(contentsOfFile: file)
        guard document["trust"] == nil else {
            throw Failure(description: "\(file) has a [trust] table, but reachd-trust, which reads it, is not installed beside reachd")
        }
        return DaemonConfiguration(monitor: monitor)
    }
}
