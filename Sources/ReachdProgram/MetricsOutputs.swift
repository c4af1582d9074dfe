import ReachdMetrics
import SDBus

/// Where the daemon's metrics go (docs/metrics.md): the HTTP listener, which renders
/// them at each scrape, and node_exporter's textfile, rewritten at each change.
/// Lives on the loop thread.
final class MetricsOutputs {
    private let loop: EventLoop
    private let families: () -> [MetricFamily]
    private let log: Log
    private var server: MetricsServer?
    private var textfile: MetricsTextfile?

    init(loop: EventLoop, log: Log, families: @escaping () -> [MetricFamily]) {
        (self.loop, self.log, self.families) = (loop, log, families)
    }

    /// Opens what `options` names and closes what it no longer does; a listener that
    /// cannot bind throws before anything changed (a reload then keeps the old config).
    func configure(_ options: MetricsOptions) throws {
        if options.listen != server?.address {
            let (families, log) = (families, log)
            let fresh = try options.listen.map { address in
                try MetricsServer(address: address, loop: loop, log: { log.warning($0) }) { format in families().exposition(format) }
            }
            server = fresh
            if let fresh { log.info("metrics: serving http://\(fresh.address)/metrics") }
        }
        if options.textfile != textfile?.path {
            textfile?.remove()
            textfile = options.textfile.map { MetricsTextfile(path: $0, log: { [log] in log.warning($0) }) }
        }
    }

    /// Something counted changed: the textfile follows (the listener renders at each scrape).
    func changed() {
        guard let textfile else { return }
        textfile.update(families().exposition(.prometheus))
    }
}
