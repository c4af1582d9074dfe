import DaemonCore
import ReachabilityBus
import ReachabilityCore
#if canImport(Glibc)
import Glibc
#endif

/// `[compat] networkmanager`: the NetworkManager-compatible surface on the bus,
/// for GLib's and Qt's NetworkManager backends. The name follows `NetworkManagerName`
/// (a real NetworkManager always wins); the objects say what the published path says.
final class NetworkManagerCompat {
    private let connection: BusConnection
    /// Made when first switched on: until then reachd follows neither the name nor systemd's jobs.
    private var name: NetworkManagerName?
    /// Brings the surface's subscribers up to date once the bus connection drained.
    private var catchUp: EventLoop.Switch!
    private let checkConnectivity: (uid_t?, @escaping () -> Void) -> Void
    private var object: NetworkManagerObject?

    /// The API level whose subset is served: NetworkManager 1.42, Debian 12's.
    static let version = "1.42.0"

    init(connection: BusConnection, loop: EventLoop, checkConnectivity: @escaping (uid_t?, @escaping () -> Void) -> Void) throws {
        self.connection = connection
        self.checkConnectivity = checkConnectivity
        // The object switches it off when it goes.
        catchUp = try loop.afterEachIteration { [unowned self] in object?.bringUpToDate() }
    }

    /// Serves the surface (and asks for the name) or withdraws it; `path` is the published one.
    func configure(enabled: Bool, path: Path?) throws {
        if enabled, object == nil {
            let served = try NetworkManagerObject(connection: connection, catchUp: catchUp, version: Self.version,
                                                  checkConnectivity: checkConnectivity)
            if let path { served.update(NetworkManagerState(path)) }
            object = served
        }
        if enabled, name == nil { name = try NetworkManagerName(connection: connection) { Log.notice($0) } }
        name?.want(enabled)
        // Released after the name: its objects go with it.
        if !enabled { object = nil }
    }

    func publish(_ path: Path) { object?.update(NetworkManagerState(path)) }
}
