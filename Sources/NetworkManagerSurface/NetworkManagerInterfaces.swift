import CSystemd
import CSystemdShim
import SDBus

#if canImport(Glibc)
import Glibc
#endif

/// The three interfaces of the NetworkManager-compatible surface, declared once. Names
/// and signatures are NetworkManager's (introspection/org.freedesktop.NetworkManager*.xml).
extension NetworkManagerObject {
    /// What the manager's changing properties are read from: the state, and the path
    /// of the primary connection (numbered per activation).
    struct ManagerValues: Equatable {
        var state: NetworkManagerState
        var primaryConnection: String

        /// The manager's properties that follow the path: name, D-Bus type, value.
        static let table: PropertyTable<ManagerValues> = [
            ("State", "u", { .u32($0.state.state.rawValue) }),
            ("Connectivity", "u", { .u32($0.state.connectivity.rawValue) }),
            ("Metered", "u", { .u32($0.state.metered.rawValue) }),
            ("PrimaryConnection", "o", { .objectPath($0.primaryConnection) }),
            ("PrimaryConnectionType", "s", { .string($0.state.primary?.connectionType ?? "") })
        ]

        /// The properties whose values differ from `other`'s, with their values: PropertiesChanged's.
        func changed(since other: ManagerValues) -> [(name: String, value: BusValue)] {
            changedProperties(Self.table.map(\.name), from: Self.table.map { $0.value(other) }, to: Self.table.map { $0.value(self) })
        }
    }

    static let manager = BusInterface<NetworkManagerObject>(
        REACHD_NM_INTERFACE,
        properties: ManagerValues.table.map { property in
            .init(property.name, property.signature) { object in property.value(object.values) }
        }
            + [
                .init("NetworkingEnabled", "b", constant: true) { _ in .boolean(true) },
                .init("Version", "s", constant: true) { object in .string(object.version) }
            ],
        methods: [
            .init("state", "", "u") { object, call in reachd_bus_reply_u32(call.message, object.current.state.rawValue) },
            .init("CheckConnectivity", "", "u") { object, call in
                let message = sd_bus_message_ref(call.message)
                object.checkConnectivity(call.senderUID) { [weak object] in
                    _ = reachd_bus_reply_u32(message, object?.current.connectivity.rawValue ?? NMConnectivity.unknown.rawValue)
                    sd_bus_message_unref(message)
                }
                return 1
            }
        ],
        signals: [.init("StateChanged", "u")])

    /// An active connection and its device are replaced, under a new path, whenever anything
    /// about them changes (as NetworkManager activates a new connection): their values are constant.
    static let activeConnection = BusInterface<NetworkManagerObject>(
        REACHD_NM_ACTIVE_INTERFACE,
        properties: [
            .init("Devices", "ao", constant: true) { object in object.current.primary.map { .objectPaths([object.devicePath($0)]) } },
            .init("Type", "s", constant: true) { object in object.current.primary.map { .string($0.connectionType) } },
            .init("Vpn", "b", constant: true) { object in object.current.primary.map { .boolean($0.isVPN) } }
        ])

    static let device = BusInterface<NetworkManagerObject>(
        REACHD_NM_DEVICE_INTERFACE,
        properties: [
            .init("Interface", "s", constant: true) { object in object.current.primary.map { .string($0.interface) } },
            .init("DeviceType", "u", constant: true) { object in object.current.primary.map { .u32($0.deviceType.rawValue) } },
            .init("Metered", "u", constant: true) { object in object.current.primary.map { _ in .u32(object.current.metered.rawValue) } }
        ])
}
