import CSystemd
import CSystemdShim
import SDBus

#if canImport(Glibc)
import Glibc
#endif

/// The read-only subset of NetworkManager's D-Bus API that GLib's
/// `GNetworkMonitorNM` and Qt's networkmanager backend read (docs/desktop-apps.md), served
/// on one bus connection: `/org/freedesktop/NetworkManager` and, while there is a
/// path, its primary active connection and that connection's device.
///
/// Like `ReachabilityObject`, its signals carry state: while the connection
/// cannot take more, nothing is queued, and once it drained it is sent what
/// changed since, in one `PropertiesChanged`.
package final class NetworkManagerObject {
    let connection: BusConnection
    let version: String
    /// `CheckConnectivity()` of a caller (its user, when known): probes, then calls back once the verdict was published.
    let checkConnectivity: (uid_t?, @escaping () -> Void) -> Void

    package private(set) var current = NetworkManagerState()
    /// What the connection was last sent of the manager's changing properties.
    private let subscription: StateSubscription<ManagerValues>
    private var managerSlot: OpaquePointer!
    private var objectManagerSlot: OpaquePointer!
    private var primarySlots: [OpaquePointer] = []
    /// NetworkManager numbers active connections as it activates them; so does this,
    /// so that a client that saw `PrimaryConnection` change reads the new one.
    private var activations = 0
    private var catchUp: EventLoop.Switch

    package static let managerPath = REACHD_NM_PATH

    /// Served (on `connection`) for as long as it lives; `catchUp` is switched on while the connection is behind.
    package init(
        connection: BusConnection, catchUp: EventLoop.Switch, version: String,
        checkConnectivity: @escaping (uid_t?, @escaping () -> Void) -> Void
    ) throws(BusError) {
        self.connection = connection
        self.catchUp = catchUp
        self.version = version
        self.checkConnectivity = checkConnectivity
        subscription = StateSubscription(connection: connection, holding: ManagerValues(state: current, primaryConnection: "/"))
        managerSlot = try Self.manager.slot(serving: self, at: Self.managerPath, on: connection)
        // libnm (nmcli, nm-online) reads NetworkManager's objects through the object
        // manager at /org/freedesktop; sd-bus answers GetManagedObjects from the vtables.
        var objectManager: OpaquePointer?
        try check(sd_bus_add_object_manager(connection.bus, &objectManager, "/org/freedesktop"), "serving the object manager")
        objectManagerSlot = objectManager
    }

    deinit {
        (primarySlots + [managerSlot, objectManagerSlot]).forEach { sd_bus_slot_unref($0) }
        catchUp.turn(on: false)
    }

    var activeConnectionPath: String {
        current.primary == nil ? "/" : "\(Self.managerPath)/ActiveConnection/\(activations)"
    }

    func devicePath(_ primary: NetworkManagerState.Primary) -> String { "\(Self.managerPath)/Devices/\(primary.interfaceIndex)" }

    /// A new state: objects for a new primary connection at once (clients read them
    /// when `PrimaryConnection` changes), the signals as soon as the connection takes them.
    package func update(_ state: NetworkManagerState) {
        guard state != current else { return }
        let primaryChanged = state.primary != current.primary
        if primaryChanged {
            // libnm follows the tree through the object manager's InterfacesAdded/Removed.
            let gone = current.primary.map { [activeConnectionPath, devicePath($0)] } ?? []
            for path in gone { _ = sd_bus_emit_object_removed(connection.bus, path) }
            primarySlots.forEach { sd_bus_slot_unref($0) }
            primarySlots = []
        }
        current = state
        if primaryChanged, let primary = state.primary {
            activations += 1
            // A failure leaves PrimaryConnection naming an object that answers "unknown object": what a client sees of a vanished one.
            for (interface, path) in [(Self.activeConnection, activeConnectionPath), (Self.device, devicePath(primary))] {
                if let slot = try? interface.slot(serving: self, at: path, on: connection) {
                    primarySlots.append(slot)
                    _ = sd_bus_emit_object_added(connection.bus, path)
                }
            }
        }
        bringUpToDate()
    }

    /// What the manager's changing properties say now.
    var values: ManagerValues { ManagerValues(state: current, primaryConnection: activeConnectionPath) }

    /// Sends what changed when the connection can take it; otherwise waits (the
    /// loop calls again after each iteration while `catchUp` is on).
    package func bringUpToDate() {
        let values = values
        subscription.bringUpToDate(with: values, now: .now) {
            let held = subscription.sent
            Self.manager.emitPropertiesChanged(values.changed(since: held), at: Self.managerPath, on: connection.bus)
            if held.state.state != current.state { _ = reachd_nm_emit_state_changed(connection.bus, current.state.rawValue) }
        }
        catchUp.turn(on: subscription.isBehind)
    }
}
