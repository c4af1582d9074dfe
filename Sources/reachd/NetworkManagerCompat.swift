import ReachabilityBus
import ReachabilityCore

/// `[compat] networkmanager`: the NetworkManager-compatible surface on the bus,
/// for GLib's and Qt's NetworkManager backends. The name follows `NetworkManagerName`
/// (a real NetworkManager always wins); the objects say what the published path says.
final class NetworkManagerCompat {
    private let connection: BusConnection
    private let name: NetworkManagerName
    /// Brings the surface's subscribers up to date once the bus connection drained.
    private var catchUp: EventLoop.Switch!
    private let checkConnectivity: (@escaping () -> Void) -> Void
    private var object: NetworkManagerObject?

    /// The API level whose subset is served: NetworkManager 1.42, Debian 12's.
    static let version = "1.42.0"

    init(connection: BusConnection, loop: EventLoop, checkConnectivity: @escaping (@escaping () -> Void) -> Void) throws {
        self.connection = connection
        self.checkConnectivity = checkConnectivity
        name = try NetworkManagerName(connection: connection) { Log.notice($0) }
        catchUp = try loop.afterEachIteration { [unowned self] in object?.bringUpToDate() }
    }

    /// Serves the surface (and asks for the name) or withdraws it; `path` is the published one.
    func configure(enabled: Bool, path: Path?) throws {
        if enabled, object == nil {
            let served = try NetworkManagerObject(connection: connection, catchUp: catchUp, version: Self.version,
                                                  checkConnectivity: checkConnectivity)
            if let path { served.update(Self.state(of: path)) }
            object = served
        }
        name.want(enabled)
        if !enabled, let served = object {
            served.withdraw()
            object = nil
        }
    }

    func publish(_ path: Path) { object?.update(Self.state(of: path)) }

    /// What NetworkManager would report of the same network. Connectivity `unknown`
    /// on a usable path is reported as NetworkManager does with its connectivity
    /// check off: FULL while there is a default route (it has no evidence against
    /// it, and GLib would turn UNKNOWN into "local only").
    static func state(of path: Path) -> NetworkManagerState {
        guard path.status != .unknown else { return NetworkManagerState() }
        guard path.status.isReachable, let interface = path.interface else {
            return NetworkManagerState(state: .disconnected, connectivity: .none)
        }
        let (state, connectivity): (NMState, NMConnectivity) = switch path.connectivity {
        case .portal: (.connectedSite, .portal)
        case .limited: (.connectedSite, .limited)
        case .full, .unknown: (.connectedGlobal, .full)
        case .none: (.disconnected, .none)
        }
        return NetworkManagerState(state: state, connectivity: connectivity, metered: path.expensive ? .yes : .guessNo,
                                   primary: primary(of: path, interface: interface))
    }

    /// The device NetworkManager would make primary: the tunnel under a VPN (its
    /// default route wins), else the interface, typed by the medium it reports.
    static func primary(of path: Path, interface: Path.Interface) -> NetworkManagerState.Primary {
        let device = path.vpn ?? interface
        let (type, connection): (NMDeviceType, String) = if path.vpn != nil {
            device.kind == .wireguard ? (.wireguard, "wireguard") : (.tun, "tun")
        } else {
            switch path.status {
            case .wifi: (.wifi, "802-11-wireless")
            case .cellular: (.modem, "gsm")
            default: [.ppp, .other].contains(interface.kind) ? (.generic, "generic") : (.ethernet, "802-3-ethernet")
            }
        }
        return NetworkManagerState.Primary(interfaceIndex: Int32(device.index), interface: device.name, deviceType: type,
                                           connectionType: connection, isVPN: path.vpn != nil)
    }
}
