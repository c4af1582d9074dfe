import ReachabilityCore
import SDBus

extension NetworkManagerState {
    /// What NetworkManager would report of the same network. Connectivity `unknown`
    /// on a usable path is reported as NetworkManager does with its connectivity
    /// check off: FULL while there is a default route (it has no evidence against
    /// it, and GLib would turn UNKNOWN into "local only").
    package init(_ path: Path) {
        guard path.status != .unknown else { self.init(); return }
        guard path.status.isReachable, let interface = path.interface else {
            self.init(state: .disconnected, connectivity: .none)
            return
        }
        let (state, connectivity): (NMState, NMConnectivity) =
            switch path.connectivity {
            case .portal: (.connectedSite, .portal)
            case .limited: (.connectedSite, .limited)
            case .full, .unknown: (.connectedGlobal, .full)
            case .none: (.disconnected, .none)
            }
        self.init(
            state: state, connectivity: connectivity, metered: path.expensive ? .yes : .guessNo,
            primary: Self.primary(of: path, interface: interface))
    }

    /// The device NetworkManager would make primary: the tunnel under a VPN (its
    /// default route wins), else the interface, typed by the medium it reports.
    static func primary(of path: Path, interface: Path.Interface) -> NetworkManagerState.Primary {
        let device = path.vpn ?? interface
        let (type, connection): (NMDeviceType, String) =
            if path.vpn != nil {
                device.kind == .wireguard ? (.wireguard, "wireguard") : (.tun, "tun")
            } else {
                switch path.status {
                case .wifi: (.wifi, "802-11-wireless")
                case .cellular: (.modem, "gsm")
                default: [.ppp, .other].contains(interface.kind) ? (.generic, "generic") : (.ethernet, "802-3-ethernet")
                }
            }
        return NetworkManagerState.Primary(
            interfaceIndex: Int32(device.index), interface: device.name, deviceType: type,
            connectionType: connection, isVPN: path.vpn != nil)
    }
}
