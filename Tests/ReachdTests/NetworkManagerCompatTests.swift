import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `[compat] networkmanager`: unmodified GLib (GNetworkMonitor, through PyGObject)
/// and Qt (QNetworkInformation, through PyQt6) read reachd's verdict from the
/// NetworkManager-compatible surface on a dbus-daemon of the system type.
@Suite(
    "the NetworkManager-compatible surface, read by GLib and Qt", .serialized, .needsSystemBusName,
    .ownThreads)
struct NetworkManagerCompatTests {
    static let nmName = "org.freedesktop.NetworkManager"

    static func config(compat: String? = "networkmanager = true", metered: Bool = false, probe: Bool = true) -> String {
        (metered ? "[monitor]\nmetered = [\"eth0\"]\n" : "")
            // A probe that times out is `limited` until retried: a flap the toolkits would show honestly. The timeout is
            // the test's choice, long enough that a machine busy with the other suites does not make one.
            + (probe ? ConnectivityTests.connectivity(uri: "http://10.1.0.1/generate_204", timeout: "5s") : "")
            + (compat.map { "\n[compat]\n\($0)\n" } ?? "")
    }

    /// Whether anyone owns NetworkManager's name on `bus`.
    static func nameHasOwner(_ bus: TestSystemBus) throws -> Bool {
        let output = try run([
            "busctl", "--address=\(bus.address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus", "NameHasOwner", "s", nmName
        ]).output
        return output.contains("true")
    }

    /// One change of the network and what each toolkit must say after it.
    struct Step {
        let name: String
        let glib: GLibView
        let qt: QtView
        /// reachd's document once it took the change in.
        let published: (Path) -> Bool
    }

    /// What one step did to a client's properties: how many notifications changed
    /// each, and how many there were in all (GLib's netlink parent notifies too).
    static func changes(in views: ArraySlice<[String: String]>, from before: [String: String]) -> [String: Int] {
        var previous = before
        var counts: [String: Int] = [:]
        for view in views {
            for (key, value) in view where previous[key] != value { counts[key, default: 0] += 1 }
            previous = view
        }
        return counts
    }

    static func expectedChanges(from before: [String: String], to after: [String: String]) -> [String: Int] {
        after.filter { before[$0.key] != $0.value }.mapValues { _ in 1 }
    }

    @Test(
        "GLib's and Qt's NetworkManager backends follow route deletion, link down, carrier loss, address loss, a captive portal and a metered interface: each property changes once, within 1 s of reachd's document",
        .timeLimit(.minutes(4)))
    func toolkitsFollowTheNetwork() async throws {
        try await withScratch { scratch in
            let config = scratch.appendingPathComponent("reachd.toml")
            try Self.config().write(to: config, atomically: true, encoding: .utf8)
            let bus = try TestSystemBus(directory: scratch, networkManagerCompat: true)
            defer { bus.stop() }
            try await withNamespaces("rdnmc", "router") { ns in
                let (host, router) = (ns[0], ns[1])
                try host.addUplink(router: router)
                let http = try await HTTPProbeServer(in: router, address: "10.1.0.1", directory: scratch, mode: "204")
                defer { http.stop() }
                let daemon = try DaemonProcess(in: host, directory: scratch, arguments: ["--bus", bus.address, "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await eventually { ConnectivityTests.path(daemon)?.connectivity == .full }, "\(daemon.log)")
                #expect(await eventually { (try? Self.nameHasOwner(bus)) == true }, "\(daemon.log)")

                let glib = try ToolkitClient<GLibView>(ToolkitClient<GLibView>.glibScript, in: host, systemBus: bus.address)
                defer { glib.stop() }
                let qt = try ToolkitClient<QtView>(ToolkitClient<QtView>.qtScript, in: host, systemBus: bus.address)
                defer { qt.stop() }
                let online = Step(
                    name: "online", glib: GLibView(available: true, connectivity: "full", metered: false),
                    qt: QtView(reachability: "Online", portal: false, medium: "Ethernet", metered: false)
                ) {
                    $0.status == .wired && $0.connectivity == .full && !$0.expensive
                }
                #expect(
                    await eventually { glib.latest?.properties == online.glib.properties && qt.latest?.properties == online.qt.properties },
                    "GLib: \(glib.views), \(glib.otherLines); Qt: \(qt.views), \(qt.otherLines)")
                #expect(glib.latest?.backend == "GNetworkMonitorNM")
                #expect(qt.latest?.backend == "networkmanager")

                func offline(_ name: String) -> Step {
                    Step(
                        name: name, glib: GLibView(available: false, connectivity: "local", metered: false),
                        qt: QtView(reachability: "Disconnected", portal: false, medium: "Unknown", metered: false)
                    ) { !$0.status.isReachable }
                }
                func back(_ name: String) -> Step { Step(name: name, glib: online.glib, qt: online.qt, published: online.published) }
                let portal = Step(
                    name: "captive portal", glib: GLibView(available: true, connectivity: "portal", metered: false),
                    qt: QtView(reachability: "Site", portal: true, medium: "Ethernet", metered: false)
                ) { $0.connectivity == .portal }
                let metered = Step(
                    name: "metered (reload)", glib: GLibView(available: true, connectivity: "full", metered: true),
                    qt: QtView(reachability: "Online", portal: false, medium: "Ethernet", metered: true)
                ) { $0.expensive }
                let restoreRoute = { () throws in _ = try host.ip("route add default via 10.1.0.1 dev eth0") }
                let reload = { (metered: Bool) in
                    try Self.config(metered: metered).write(to: config, atomically: true, encoding: .utf8)
                    daemon.signal(SIGHUP)
                }
                let steps: [(Step, () throws -> Void)] = [
                    (offline("route deleted"), { _ = try host.ip("route del default") }),
                    (back("route restored"), restoreRoute),
                    (offline("link down"), { _ = try host.ip("link set dev eth0 down") }),
                    (
                        back("link up"),
                        {
                            _ = try host.ip("link set dev eth0 up"); try restoreRoute()
                        }
                    ),
                    (offline("carrier lost"), { _ = try router.ip("link set dev up0 down") }),
                    (back("carrier back"), { _ = try router.ip("link set dev up0 up") }),
                    (offline("address lost"), { _ = try host.ip("addr del 10.1.0.2/24 dev eth0") }),
                    (
                        back("address back"),
                        {
                            _ = try host.ip("addr add 10.1.0.2/24 dev eth0"); try restoreRoute()
                        }
                    ),
                    // The probe now meets a portal; CheckConnectivity (NetworkManager's, on the surface) probes at once.
                    (
                        portal,
                        {
                            try http.set("redirect")
                            try run([
                                "busctl", "--address=\(bus.address)", "call", Self.nmName, "/org/freedesktop/NetworkManager", Self.nmName,
                                "CheckConnectivity"
                            ])
                        }
                    ),
                    // Not full: the probe is retried within a second or two.
                    (back("portal left"), { try http.set("204") }),
                    (metered, { try reload(true) }),
                    (back("not metered (reload)"), { try reload(false) })
                ]
                var table = ["step | GLib: property changes (notifications) | Qt: property changes (signals)"]
                var current = online
                for (step, change) in steps {
                    let (glibStart, qtStart) = (glib.views.count, qt.views.count)
                    try change()
                    #expect(
                        await eventually(.seconds(8)) { ConnectivityTests.path(daemon).map(step.published) == true },
                        "\(step.name): reachd did not publish it: \(String(describing: ConnectivityTests.path(daemon)))")
                    let reached = await eventually(.seconds(1)) {
                        glib.latest?.properties == step.glib.properties && qt.latest?.properties == step.qt.properties
                    }
                    #expect(reached, "\(step.name): GLib \(String(describing: glib.latest)), Qt \(String(describing: qt.latest))")
                    // Anything more that comes would be a duplicate or a flap.
                    try await Task.sleep(for: .milliseconds(500))
                    let glibViews = glib.views[glibStart...], qtViews = qt.views[qtStart...]
                    let glibChanges = Self.changes(in: glibViews.map(\.properties)[...], from: current.glib.properties)
                    let qtChanges = Self.changes(in: qtViews.map(\.properties)[...], from: current.qt.properties)
                    #expect(
                        glibChanges == Self.expectedChanges(from: current.glib.properties, to: step.glib.properties),
                        "\(step.name): GLib \(Array(glibViews)); reachd: \(daemon.log)")
                    #expect(
                        qtChanges == Self.expectedChanges(from: current.qt.properties, to: step.qt.properties),
                        "\(step.name): Qt \(Array(qtViews)); reachd: \(daemon.log)")
                    table.append(
                        "\(step.name) | \(glibChanges.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) (\(glibViews.count))"
                            + " | \(qtChanges.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) (\(qtViews.count))"
                    )
                    current = step
                }
                print(table.joined(separator: "\n"))
            }
        }
    }

    @Test(
        "off: nothing owned and GLib falls back to netlink, Qt has no backend; on (reload): owned only while nobody else owns the name, taken back when it is free; off again (reload): released; a misspelt key is refused with file:line",
        .timeLimit(.minutes(3)))
    func ownership() async throws {
        try await withScratch { scratch in
            let config = scratch.appendingPathComponent("reachd.toml")
            try Self.config(compat: nil, probe: false).write(to: config, atomically: true, encoding: .utf8)
            let bus = try TestSystemBus(directory: scratch)
            defer { bus.stop() }
            try await withNamespaces("rdnmo", "router") { ns in
                let host = ns[0]
                try host.addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: host, directory: scratch, arguments: ["--bus", bus.address, "--config", config.path])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(try !Self.nameHasOwner(bus))

                let glib = try ToolkitClient<GLibView>(ToolkitClient<GLibView>.glibScript, in: host, systemBus: bus.address)
                defer { glib.stop() }
                let qt = try ToolkitClient<QtView>(ToolkitClient<QtView>.qtScript, in: host, systemBus: bus.address)
                defer { qt.stop() }
                #expect(await eventually { glib.latest != nil }, "\(glib.otherLines)")
                #expect(glib.latest?.backend == "GNetworkMonitorNetlink")
                #expect(await eventually { qt.exitStatus != nil })
                #expect(qt.exitStatus == 3 && qt.otherLines.contains { $0.contains("no-backend") }, "\(qt.otherLines)")

                // Switched on while the bus has no compat policy (the package's default): refused, and the log says what to link.
                try Self.config(probe: false).write(to: config, atomically: true, encoding: .utf8)
                daemon.signal(SIGHUP)
                #expect(
                    await eventually {
                        daemon.log.contains("link /usr/share/reachd/dbus-1/io.reachd.NetworkManagerCompat.conf into /etc/dbus-1/system.d/")
                    }, "\(daemon.log)")
                #expect(try !Self.nameHasOwner(bus))
                try bus.allowNetworkManagerCompat()

                // Someone else holds the name (as NetworkManager would): reachd, switched on, leaves it.
                let standIn = Process()
                standIn.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                standIn.arguments = [
                    "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", "-c",
                    """
                    from gi.repository import Gio, GLib
                    Gio.bus_own_name(Gio.BusType.SYSTEM, "\(Self.nmName)", Gio.BusNameOwnerFlags.NONE, None, None, None)
                    GLib.MainLoop().run()
                    """
                ]
                try standIn.run()
                defer { if standIn.isRunning { kill(standIn.processIdentifier, SIGKILL); standIn.waitUntilExit() } }
                #expect(await eventually { (try? Self.nameHasOwner(bus)) == true })
                try Self.config(probe: false).write(to: config, atomically: true, encoding: .utf8)
                daemon.signal(SIGHUP)
                #expect(await eventually { daemon.log.contains("reloaded") })
                try await Task.sleep(for: .seconds(1))
                #expect(!daemon.log.contains("compat: owning"), "\(daemon.log)")

                // It goes away: reachd takes the name.
                kill(standIn.processIdentifier, SIGKILL)
                standIn.waitUntilExit()
                #expect(await eventually { daemon.log.contains("compat: owning \(Self.nmName)") }, "\(daemon.log)")
                #expect(try Self.nameHasOwner(bus))
                let state = try run([
                    "busctl", "--address=\(bus.address)", "call", Self.nmName, "/org/freedesktop/NetworkManager",
                    Self.nmName, "state"
                ]).output
                #expect(state.trimmingCharacters(in: .whitespacesAndNewlines) == "u 70")
                // Nothing but the subset: no devices (the policy refuses the call), no other property, no writes.
                let devices = try run(
                    [
                        "busctl", "--address=\(bus.address)", "call", Self.nmName, "/org/freedesktop/NetworkManager",
                        Self.nmName, "GetDevices"
                    ], check: false)
                #expect(devices.status != 0, "\(devices)")
                let property = try run(
                    [
                        "busctl", "--address=\(bus.address)", "get-property", Self.nmName, "/org/freedesktop/NetworkManager",
                        Self.nmName, "WirelessEnabled"
                    ], check: false)
                #expect(
                    property.status != 0
                        && property.error.contains("Unknown interface org.freedesktop.NetworkManager or property WirelessEnabled"),
                    "\(property)")
                let write = try run(
                    [
                        "busctl", "--address=\(bus.address)", "set-property", Self.nmName, "/org/freedesktop/NetworkManager",
                        Self.nmName, "NetworkingEnabled", "b", "false"
                    ], check: false)
                #expect(write.status != 0, "\(write)")

                // A misspelt key keeps the running config (and the name).
                try "[compat]\nnetworkmanger = true\n".write(to: config, atomically: true, encoding: .utf8)
                daemon.signal(SIGHUP)
                #expect(await eventually { daemon.log.contains("reachd.toml:2") }, "\(daemon.log)")
                #expect(try Self.nameHasOwner(bus))

                // Off again: released.
                try Self.config(compat: "networkmanager = false", probe: false).write(to: config, atomically: true, encoding: .utf8)
                daemon.signal(SIGHUP)
                #expect(await eventually { (try? Self.nameHasOwner(bus)) == false }, "\(daemon.log)")
            }
        }
    }
}
