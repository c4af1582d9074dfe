import SDBus

/// NetworkManager's D-Bus vocabulary, as its documentation (`nm-dbus-interface.h`)
/// numbers it: what GLib's and Qt's NetworkManager backends decode.
package enum NMState: UInt32, Sendable {
    case unknown = 0, asleep = 10, disconnected = 20, disconnecting = 30, connecting = 40
    case connectedLocal = 50, connectedSite = 60, connectedGlobal = 70
}

package enum NMConnectivity: UInt32, Sendable {
    case unknown = 0, none = 1, portal = 2, limited = 3, full = 4
}

package enum NMMetered: UInt32, Sendable {
    case unknown = 0, yes = 1, no = 2, guessYes = 3, guessNo = 4
}

package enum NMDeviceType: UInt32, Sendable {
    case unknown = 0, ethernet = 1, wifi = 2, modem = 8, generic = 14, tun = 16, ipTunnel = 17, wireguard = 29
}

/// Everything the NetworkManager-compatible surface says: the manager's
/// properties and, while there is a path, its primary connection and device.
package struct NetworkManagerState: Equatable, Sendable {
    package var state = NMState.unknown
    package var connectivity = NMConnectivity.unknown
    package var metered = NMMetered.unknown
    package var primary: Primary?

    /// The connection that carries the path, and its one device.
    package struct Primary: Equatable, Sendable {
        package var interfaceIndex: Int32
        package var interface: String
        package var deviceType: NMDeviceType
        /// NetworkManager's connection type: `802-3-ethernet`, `802-11-wireless`, `gsm`, `wireguard`, `tun`, …
        package var connectionType: String
        package var isVPN: Bool

        package init(interfaceIndex: Int32, interface: String, deviceType: NMDeviceType, connectionType: String, isVPN: Bool) {
            self.interfaceIndex = interfaceIndex
            self.interface = interface
            self.deviceType = deviceType
            self.connectionType = connectionType
            self.isVPN = isVPN
        }
    }

    package init(state: NMState = .unknown, connectivity: NMConnectivity = .unknown, metered: NMMetered = .unknown, primary: Primary? = nil)
    {
        self.state = state
        self.connectivity = connectivity
        self.metered = metered
        self.primary = primary
    }
}
