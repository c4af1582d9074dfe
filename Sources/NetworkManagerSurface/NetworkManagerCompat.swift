import ReachabilityCore
import SDBus

#if canImport(Glibc)
import Glibc
#endif

/// `[compat] networkmanager`: the NetworkManager-compatible surface on the bus,
/// for GLib's and Qt's NetworkManager backends. The name follows `NetworkManagerName`
/// (a real NetworkManager always wins); the objects say what the published path says.
package final class NetworkManagerCompat {
    private let connection: BusConnection
    /// Made when first switched on: until then reachd follows neither the name nor systemd's jobs.
    private var name: NetworkManagerName?
    /// Brings the surface's subscribers up to date once the bus connection drained.
    private var catchUp: EventLoop.Switch!
    private let checkConnectivity: (uid_t?, @escaping () -> Void) -> Void
    /// Where the name's comings and goings are said.
    private let log: (String) -> Void
    private var object: NetworkManagerObject?

    /// The API level whose subset is served: NetworkManager 1.42, Debian 12's.
    package static let version = "1.42.0"

    package init(
        connection: BusConnection, loop: EventLoop, log: @escaping (String) -> Void,
        checkConnectivity: @escaping (uid_t?, @escaping () -> Void) -> Void
    ) throws {
        self.connection = connection
        self.checkConnectivity = checkConnectivity
        self.log = log
        // The object switches it off when it goes.
        catchUp = try loop.afterEachIteration { [unowned self] in object?.bringUpToDate() }
    }

    /// Serves the surface (and asks for the name) or withdraws it; `path` is the published one.
    package func configure(enabled: Bool, path: Path?) throws {
        if enabled, object == nil {
            let served = try NetworkManagerObject(
                connection: connection, catchUp: catchUp, version: Self.version,
                checkConnectivity: checkConnectivity)
            if let path { served.update(NetworkManagerState(path)) }
            object = served
        }
        if enabled, name == nil { name = try NetworkManagerName(connection: connection) { [log] in log($0) } }
        name?.want(enabled)
        // Released after the name: its objects go with it.
        if !enabled { object = nil }
    }

    package func publish(_ path: Path) { object?.update(NetworkManagerState(path)) }
}
