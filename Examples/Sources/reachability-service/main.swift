// reachability-service: a long-running service that follows reachd and pauses its
// work while there is no usable path, run by swift-service-lifecycle, which ends
// it cleanly on SIGTERM (systemd's stop) and SIGINT.
import Logging
import ReachabilityClient
import ServiceLifecycle

struct SyncService: Service {
    let reachd = ReachabilityClient()
    let logger = Logger(label: "reachability-service")

    func run() async throws {
        // The path stream ends with the task: gracefulShutdown cancels it.
        await withGracefulShutdownHandler {
            for await path in reachd.paths.cancelOnGracefulShutdown() {
                if path.status.isReachable && path.trust != .compromised {
                    logger.info("resuming: \(path.status.rawValue) via \(path.interface?.name ?? "-")")
                } else {
                    logger.info("pausing: \(path.status.rawValue)")
                }
            }
        } onGracefulShutdown: {
            logger.info("shutting down")
        }
    }
}

let logger = Logger(label: "reachability-service")
let group = ServiceGroup(services: [SyncService()], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
try await group.run()
