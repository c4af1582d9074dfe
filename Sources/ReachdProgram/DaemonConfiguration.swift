import FoundationEssentials
import ReachabilityCore
import ReachdMetrics
import TOML
import TrustHelperMessages

#if canImport(Glibc)
import Glibc
#endif

/// Everything reachd reads from its config file: the `[monitor]`, `[connectivity]`,
/// `[metrics]` and `[compat]` tables, and what it needs of `[trust]` (validated by reachd-trust, which owns that table).
struct DaemonConfiguration {
    var monitor = MonitorOptions()
    var trust = TrustConfigurationSummary.none
    var metrics = MetricsOptions()
    var connectivity = ConnectivityOptions()
    /// `[compat] networkmanager`: serve the NetworkManager-compatible surface on the bus.
    var networkManagerCompat = false

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A missing file means defaults; anything else wrong is an error naming `file:line`.
    /// At start, before the loop runs: the `[trust]` table is checked by the helper here.
    static func load(_ file: String, helper: TrustHelper?) throws -> DaemonConfiguration {
        var configuration = try parse(file, helperInstalled: helper != nil)
        if let helper, access(file, F_OK) == 0 { configuration.trust = try helper.checkConfig(file) }
        return configuration
    }

    /// `load` on the loop (a reload): the helper checks `[trust]` while the loop goes on;
    /// `completion` runs there with the configuration, or why it cannot be in force.
    static func startLoading(
        _ file: String, helper: TrustHelper?, runs: HelperRuns,
        completion: @escaping (Result<DaemonConfiguration, any Error>) -> Void
    ) {
        let parsed: DaemonConfiguration
        do {
            parsed = try parse(file, helperInstalled: helper != nil)
        } catch {
            return completion(.failure(error))
        }
        guard let helper, access(file, F_OK) == 0 else { return completion(.success(parsed)) }
        do {
            try helper.startConfigCheck(file, runs: runs) { result in
                completion(
                    result.map { summary in
                        var checked = parsed
                        checked.trust = summary
                        return checked
                    }.mapError { $0 })
            }
        } catch {
            completion(.failure(error))
        }
    }

    /// Everything but the `[trust]` table, which the helper checks (`TrustHelper.checkConfig`
    /// or, on the loop, `startConfigCheck`): `trust` is `.none` here.
    static func parse(_ file: String, helperInstalled: Bool) throws -> DaemonConfiguration {
        guard access(file, F_OK) == 0 else { return DaemonConfiguration() }
        let monitor = try MonitorOptions.load(contentsOf: file)
        let document = try TOML.parse(contentsOfFile: file)
        var root = TOMLTableReader(document, file: file, name: "")
        var metrics = MetricsOptions()
        if var table = try root.table("metrics") { metrics = try MetricsOptions(reading: &table) }
        var connectivity = ConnectivityOptions()
        if var table = try root.table("connectivity") { connectivity = try ConnectivityOptions(reading: &table) }
        var networkManagerCompat = false
        if var table = try root.table("compat") {
            networkManagerCompat = try table.bool("networkmanager") ?? false
            try table.finish()
        }
        // [monitor] is read by MonitorOptions above and [trust] by reachd-trust; reachd,
        // which owns the file, refuses any other table or top-level key.
        _ = root.value("monitor")
        _ = root.value("trust")
        try root.finish()
        // Without the helper a config may still go without trust checks.
        guard helperInstalled || document["trust"] == nil else {
            throw Failure(description: "\(file) has a [trust] table, but reachd-trust, which reads it, is not installed beside reachd")
        }
        return DaemonConfiguration(
            monitor: monitor, metrics: metrics, connectivity: connectivity, networkManagerCompat: networkManagerCompat)
    }
}
