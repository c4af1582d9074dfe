import CSystemd
import CSystemdShim
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
    /// What the connection was last sent.
    private var sent = NetworkManagerState()
    private var managerSlot: OpaquePointer!
    private var objectManagerSlot: OpaquePointer!
    private var primarySlots: [OpaquePointer] = []
    /// NetworkManager numbers active connections as it activates them; so does this,
    /// so that a client that saw `PrimaryConnection` change reads the new one.
    private var activations = 0
    private var catchUp: EventLoop.Switch

    package static let managerPath = REACHD_NM_PATH

    /// Served (on `connection`) for as long as it lives; `catchUp` is switched on while the connection is behind.
    package init(connection: BusConnection, catchUp: EventLoop.Switch, version: String,
                 checkConnectivity: @escaping (uid_t?, @escaping () -> Void) -> Void) throws(BusError) {
        self.connection = connection
        self.catchUp = catchUp
        self.version = version
        self.checkConnectivity = checkConnectivity
        reachd_nm_set_handlers(reachd_nm_handlers(
            state: { message, userdata, _ in
                reachd_bus_reply_u32(message, NetworkManagerObject.from(userdata).current.state.rawValue)
            },
            check_connectivity: { message, userdata, _ in
                let object = NetworkManagerObject.from(userdata)
                let call = sd_bus_message_ref(message)
                object.checkConnectivity(senderUID(message)) { [weak object] in
                    _ = reachd_bus_reply_u32(call, object?.current.connectivity.rawValue ?? NMConnectivity.unknown.rawValue)
                    sd_bus_message_unref(call)
                }
                return 1
            },
            property: { _, path, _, name, reply, userdata, _ in
                guard let path, let name,
                      let value = NetworkManagerObject.from(userdata).value(of: String(cString: name), at: String(cString: path)) else {
                    return -ENOENT
                }
                return value.append(to: reply)
            }))
        var slot: OpaquePointer?
        try check(reachd_nm_add_manager(connection.bus, &slot, Unmanaged.passUnretained(self).toOpaque()),
                  "serving \(Self.managerPath)")
        managerSlot = slot
        var objectManager: OpaquePointer?
        try check(reachd_nm_add_object_manager(connection.bus, &objectManager), "serving the object manager")
        objectManagerSlot = objectManager
    }

    deinit {
        (primarySlots + [managerSlot, objectManagerSlot]).forEach { sd_bus_slot_unref($0) }
        catchUp.turn(on: false)
    }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> NetworkManagerObject {
        Unmanaged<NetworkManagerObject>.fromOpaque(userdata!).takeUnretainedValue()
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
            addPrimaryObjects(primary)
            for path in [activeConnectionPath, devicePath(primary)] { _ = sd_bus_emit_object_added(connection.bus, path) }
        }
        bringUpToDate()
    }

    private func addPrimaryObjects(_ primary: NetworkManagerState.Primary) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        var active: OpaquePointer?, device: OpaquePointer?
        // A failure leaves PrimaryConnection naming an object that answers "unknown object": what a client sees of a vanished one.
        if reachd_nm_add_active_connection(connection.bus, &active, activeConnectionPath, userdata) >= 0, let active {
            primarySlots.append(active)
        }
        if reachd_nm_add_device(connection.bus, &device, devicePath(primary), userdata) >= 0, let device {
            primarySlots.append(device)
        }
    }

    /// Sends what changed when the connection can take it; otherwise waits (the
    /// loop calls again after each iteration while `catchUp` is on).
    package func bringUpToDate() {
        guard sent != current else { return catchUp.turn(on: false) }
        guard connection.canTakeMore else { return catchUp.turn(on: true) }
        catchUp.turn(on: false)
        let bus = connection.bus
        var changed: [String] = []
        if sent.state != current.state { changed.append("State") }
        if sent.connectivity != current.connectivity { changed.append("Connectivity") }
        if sent.metered != current.metered { changed.append("Metered") }
        if sent.primary != current.primary { changed += ["PrimaryConnection", "PrimaryConnectionType"] }
        var names = changed.map { strdup($0) } + [nil]
        defer { names.forEach { free($0) } }
        _ = sd_bus_emit_properties_changed_strv(bus, REACHD_NM_PATH, REACHD_NM_INTERFACE, &names)
        if sent.state != current.state { _ = reachd_nm_emit_state_changed(bus, current.state.rawValue) }
        sent = current
    }

    func value(of name: String, at path: String) -> BusValue? {
        if path == Self.managerPath {
            switch name {
            case "State": return .u32(current.state.rawValue)
            case "Connectivity": return .u32(current.connectivity.rawValue)
            case "Metered": return .u32(current.metered.rawValue)
            case "PrimaryConnection": return .objectPath(activeConnectionPath)
            case "PrimaryConnectionType": return .string(current.primary?.connectionType ?? "")
            case "NetworkingEnabled": return .boolean(true)
            case "Version": return .string(version)
            default: return nil
            }
        }
        guard let primary = current.primary else { return nil }
        switch name {
        case "Devices": return .objectPaths([devicePath(primary)])
        case "Type": return .string(primary.connectionType)
        case "Vpn": return .boolean(primary.isVPN)
        case "Interface": return .string(primary.interface)
        case "DeviceType": return .u32(primary.deviceType.rawValue)
        case "Metered": return .u32(current.metered.rawValue)
        default: return nil
        }
    }
}
