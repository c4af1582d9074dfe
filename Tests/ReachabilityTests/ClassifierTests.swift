import Foundation
import Netlink
import Testing

@testable import ReachabilityCore

/// Classification from netlink facts and from the device model, fed with
/// fixtures of real sysfs trees (Wi-Fi and WWAN hardware cannot exist in CI).
@Suite("Interface classification")
struct ClassifierTests {
    /// A sysfs `class/net` tree as real machines have it, built in a temporary directory.
    final class SysfsFixture {
        let root: String

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("sysfs-\(UUID())").path
            // Intel AX201 laptop Wi-Fi (iwlwifi): DEVTYPE=wlan and a phy80211 link.
            try device("wlp0s20f3", uevent: "DEVTYPE=wlan\nINTERFACE=wlp0s20f3\nIFINDEX=3", driver: "iwlwifi", phy: true)
            // Broadcom brcmfmac (Raspberry Pi): some kernels put no DEVTYPE, the phy80211 link is there.
            try device("wlan0", uevent: "INTERFACE=wlan0\nIFINDEX=3", driver: "brcmfmac", phy: true)
            // Quectel EC25 in QMI mode, and a Sierra EM7455 in MBIM mode (ModemManager's usual pair).
            try device("wwp0s20u4i4", uevent: "DEVTYPE=wwan\nINTERFACE=wwp0s20u4i4\nIFINDEX=5", driver: "qmi_wwan")
            try device("wwan0", uevent: "INTERFACE=wwan0\nIFINDEX=6", driver: "cdc_mbim")
            // iPhone USB tethering (ipheth) and Android RNDIS tethering.
            try device("enx1a2b3c4d5e6f", uevent: "INTERFACE=enx1a2b3c4d5e6f\nIFINDEX=7", driver: "ipheth")
            try device("usb0", uevent: "INTERFACE=usb0\nIFINDEX=8", driver: "rndis_host")
            // Ordinary Ethernet: Intel e1000e and a USB dongle on cdc_ether.
            try device("enp0s31f6", uevent: "INTERFACE=enp0s31f6\nIFINDEX=2", driver: "e1000e")
            try device("enx00e04c680001", uevent: "INTERFACE=enx00e04c680001\nIFINDEX=9", driver: "cdc_ether")
        }

        func device(_ name: String, uevent: String, driver: String, phy: Bool = false) throws {
            let directory = "\(root)/\(name)"
            let manager = FileManager.default
            try manager.createDirectory(atPath: "\(directory)/device", withIntermediateDirectories: true)
            try (uevent + "\n").write(toFile: "\(directory)/uevent", atomically: true, encoding: .utf8)
            try manager.createSymbolicLink(
                atPath: "\(directory)/device/driver",
                withDestinationPath: "../../../../bus/usb/drivers/\(driver)")
            if phy {
                try manager.createSymbolicLink(atPath: "\(directory)/phy80211", withDestinationPath: "../../ieee80211/phy0")
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }
    }

    func classifier(_ facts: any InterfaceFactsSource, overrides: [(String, InterfaceKind)] = []) -> InterfaceClassifier {
        InterfaceClassifier(overrides: overrides.map { (pattern: $0.0, kind: $0.1) }, facts: facts)
    }

    func ether(_ name: String, index: Int32 = 2) -> Link { Link(index: index, name: name) }

    @Test("the sysfs reader on real layouts")
    func sysfsReader() throws {
        let fixture = try SysfsFixture()
        let facts = SysfsInterfaceFacts(root: fixture.root)
        #expect(facts.facts(forInterfaceNamed: "wlp0s20f3") == InterfaceFacts(deviceType: "wlan", isWireless: true, driver: "iwlwifi"))
        #expect(facts.facts(forInterfaceNamed: "wwan0") == InterfaceFacts(deviceType: nil, isWireless: false, driver: "cdc_mbim"))
        #expect(facts.facts(forInterfaceNamed: "missing") == InterfaceFacts())
        #expect(facts.facts(forInterfaceNamed: "../etc") == InterfaceFacts())
    }

    @Test(
        "Ethernet-typed devices by their facts",
        arguments: [
            ("wlp0s20f3", InterfaceKind.wifi), ("wlan0", .wifi), ("wwp0s20u4i4", .cellular), ("wwan0", .cellular),
            ("enx1a2b3c4d5e6f", .cellular), ("usb0", .cellular), ("enp0s31f6", .ethernet), ("enx00e04c680001", .ethernet)
        ])
    func byFacts(name: String, expected: InterfaceKind) throws {
        let fixture = try SysfsFixture()
        #expect(classifier(SysfsInterfaceFacts(root: fixture.root)).kind(of: ether(name)) == expected)
    }

    @Test(
        "IFLA_INFO_KIND comes first",
        arguments: [
            ("veth", InterfaceKind.veth), ("bridge", .bridge), ("bond", .bond), ("vlan", .vlan), ("macvlan", .macvlan),
            ("tun", .tunnel), ("wireguard", .wireguard), ("gre", .tunnel), ("vxlan", .tunnel), ("wwan", .cellular)
        ])
    func byLinkKind(kind: String, expected: InterfaceKind) {
        // Even with Wi-Fi facts: the netlink kind wins.
        let facts = FixedInterfaceFacts(["x0": InterfaceFacts(deviceType: "wlan", isWireless: true)])
        #expect(classifier(facts).kind(of: Link(index: 4, name: "x0", kind: kind)) == expected)
    }

    @Test("ARPHRD types")
    func byHardwareType() {
        let none = NoInterfaceFacts()
        #expect(
            classifier(none).kind(of: Link(index: 1, name: "lo", hardwareType: HardwareType.loopback, flags: [.up, .loopback])) == .loopback
        )
        #expect(classifier(none).kind(of: Link(index: 5, name: "ppp0", hardwareType: HardwareType.ppp)) == .ppp)
        #expect(classifier(none).kind(of: Link(index: 6, name: "gre1", hardwareType: HardwareType.ipGRE)) == .tunnel)
        // Raw-IP: a tunnel, unless it is a modem (rmnet/ccmni names, wwan device type).
        #expect(classifier(none).kind(of: Link(index: 7, name: "vpn0", hardwareType: HardwareType.none)) == .tunnel)
        #expect(classifier(none).kind(of: Link(index: 8, name: "rmnet_data0", hardwareType: HardwareType.rawIP)) == .cellular)
        #expect(classifier(none).kind(of: Link(index: 9, name: "ccmni0", hardwareType: HardwareType.none)) == .cellular)
        let modem = FixedInterfaceFacts(["wwan0": InterfaceFacts(deviceType: "wwan")])
        #expect(classifier(modem).kind(of: Link(index: 10, name: "wwan0", hardwareType: HardwareType.none)) == .cellular)
    }

    @Test("a config override wins over everything")
    func overrides() throws {
        let fixture = try SysfsFixture()
        let subject = classifier(SysfsInterfaceFacts(root: fixture.root), overrides: [("usb*", .ethernet), ("eth9", .cellular)])
        #expect(subject.kind(of: ether("usb0")) == .ethernet)
        #expect(subject.kind(of: Link(index: 3, name: "eth9", kind: "veth")) == .cellular)
    }

    @Test("bridges, bonds and VLANs take the medium of what is under them")
    func stackedMedia() throws {
        let facts = FixedInterfaceFacts(["wlan0": InterfaceFacts(deviceType: "wlan", isWireless: true)])
        var evaluator = PathEvaluator(options: MonitorOptions(), facts: facts)
        let wifi = Link(index: 2, name: "wlan0", masterIndex: 10)
        let bridge = Link(index: 10, name: "br0", kind: "bridge")
        let vlan = Link(index: 11, name: "br0.5", kind: "vlan", lowerIndex: 10)
        let bondMemberWired = Link(index: 3, name: "eth0", masterIndex: 12)
        let bondMemberWifi = Link(index: 4, name: "wlan1", masterIndex: 12)
        let bond = Link(index: 12, name: "bond0", kind: "bond")
        let state = NetworkState(links: [wifi, bridge, vlan, bondMemberWired, bondMemberWifi, bond])
        #expect(evaluator.medium(of: bridge, state: state) == .wifi)
        #expect(evaluator.medium(of: vlan, state: state) == .wifi)
        #expect(evaluator.medium(of: bond, state: state) == .wired, "a wired member is preferred")
        let emptyBridge = Link(index: 13, name: "br1", kind: "bridge")
        #expect(evaluator.medium(of: emptyBridge, state: NetworkState(links: [emptyBridge])) == .wired)
    }
}
