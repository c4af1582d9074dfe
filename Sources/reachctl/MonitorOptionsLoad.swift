import ReachabilityCore

/// The `[monitor]` options of a config file, or the defaults without one.
struct MonitorOptionsLoad {
    let file: String?

    func load() throws -> MonitorOptions {
        guard let file else { return MonitorOptions() }
        do {
            return try MonitorOptions.load(contentsOf: file)
        } catch {
            throw fail("reading \(file)", "\(error)")
        }
    }
}
