import NetworkManagerSurface
import ReachabilityCore
import Testing

/// The mapping (docs/desktop-apps.md) of reachd's path onto NetworkManager's values, for the
/// cases the GLib and Qt tests (NetworkManagerCompatTests) cannot make: no
/// Wi-Fi, modem or VPN exists in CI, and `limited` needs a probe that times out.
@Suite("what NetworkManager would report of a path")
struct NetworkManagerMappingTests {
    static let eth0 = Path.Interface(name: "eth0", index: 2, kind: .ethernet)

    static func reachable(
        _ status: ReachabilityStatus = .wired, _ interface: Path.Interface = eth0,
        connectivity: Connectivity = .full, expensive: Bool = false, vpn: Path.Interface? = nil
    ) -> Path {
        Path(status: status, interface: interface, ipv4: true, expensive: expensive, vpn: vpn, connectivity: connectivity)
    }

    @Test("status and connectivity: unknown, unreachable, portal, limited, full, and unknown on a usable path as full")
    func states() {
        let cases: [(Path, NMState, NMConnectivity)] = [
            (Path(status: .unknown), .unknown, .unknown),
            (Path(status: .unreachable, reason: .noRoute), .disconnected, .none),
            (Self.reachable(connectivity: .portal), .connectedSite, .portal),
            (Self.reachable(connectivity: .limited), .connectedSite, .limited),
            (Self.reachable(connectivity: .full), .connectedGlobal, .full),
            (Self.reachable(connectivity: .unknown), .connectedGlobal, .full)
        ]
        for (path, state, connectivity) in cases {
            let mapped = NetworkManagerState(path)
            #expect(mapped.state == state && mapped.connectivity == connectivity, "\(path.status) \(path.connectivity)")
            #expect((mapped.primary == nil) == !path.status.isReachable)
        }
    }

    @Test("metered: YES when expensive, GUESS_NO otherwise, UNKNOWN without a path")
    func metered() {
        #expect(NetworkManagerState(Self.reachable(expensive: true)).metered == .yes)
        #expect(NetworkManagerState(Self.reachable()).metered == .guessNo)
        #expect(NetworkManagerState(Path(status: .unreachable, reason: .linkDown)).metered == .unknown)
    }

    @Test("the primary device names the medium; under a VPN it is the tunnel")
    func devices() {
        let wlan = Path.Interface(name: "wlan0", index: 3, kind: .wifi)
        let wwan = Path.Interface(name: "wwan0", index: 4, kind: .cellular)
        let ppp = Path.Interface(name: "ppp0", index: 5, kind: .ppp)
        let bridge = Path.Interface(name: "br0", index: 6, kind: .bridge)
        let wg = Path.Interface(name: "wg0", index: 7, kind: .wireguard)
        let tun = Path.Interface(name: "tun0", index: 8, kind: .tunnel)
        let cases: [(Path, NMDeviceType, String, String)] = [
            (Self.reachable(), .ethernet, "802-3-ethernet", "eth0"),
            (Self.reachable(.wired, bridge), .ethernet, "802-3-ethernet", "br0"),
            (Self.reachable(.wired, ppp), .generic, "generic", "ppp0"),
            (Self.reachable(.wifi, wlan), .wifi, "802-11-wireless", "wlan0"),
            (Self.reachable(.cellular, wwan, expensive: true), .modem, "gsm", "wwan0"),
            (Self.reachable(.wifi, wlan, vpn: wg), .wireguard, "wireguard", "wg0"),
            (Self.reachable(.wired, vpn: tun), .tun, "tun", "tun0")
        ]
        for (path, type, connection, name) in cases {
            let primary = NetworkManagerState(path).primary
            #expect(
                primary?.deviceType == type && primary?.connectionType == connection && primary?.interface == name,
                "\(path.status) via \(path.interface?.name ?? "-") vpn \(path.vpn?.name ?? "-"): \(String(describing: primary))")
            #expect(primary?.isVPN == (path.vpn != nil))
        }
    }
}
