import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private dbus-daemon of the system type, with the system bus's default
/// policy and the project's policy file, on a socket in a scratch directory.
public final class TestSystemBus: @unchecked Sendable {
    let process = Process()
    /// Where clients connect (`DBUS_SYSTEM_BUS_ADDRESS`).
    public let address: String
    /// The socket the broker listens on.
    public let socket: String
    private let config: URL
    private let standIns: [String]

    static let policyDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("systemd")
    /// The project's policy file (systemd/ beside the package).
    public static let policyFile = policyDirectory.appendingPathComponent("io.reachd.Reachability1.conf").path
    /// The policy that comes with `[compat] networkmanager` (the package ships it inactive).
    public static let compatPolicyFile = policyDirectory.appendingPathComponent("io.reachd.NetworkManagerCompat.conf").path

    /// `networkManagerCompat`: with the compat policy linked in, as an operator who switched the surface on does.
    /// `standIns`: names root may own too, for a stand-in of a system service (logind).
    public init(directory: URL, networkManagerCompat: Bool = false, standIns: [String] = []) throws {
        socket = directory.appendingPathComponent("system_bus_socket").path
        config = directory.appendingPathComponent("system.conf")
        self.standIns = standIns
        try Self.writeConfig(config, socket: socket, networkManagerCompat: networkManagerCompat, standIns: standIns)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["dbus-daemon", "--config-file=\(config.path)", "--nofork", "--print-address=1"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        address = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard address.hasPrefix("unix:") else {
            throw CommandFailure(
                command: process.arguments ?? [], result: CommandResult(status: -1, output: line, error: "printed no address"))
        }
    }

    /// What an operator does to switch the surface on: the compat policy linked in, the bus reloaded.
    public func allowNetworkManagerCompat() throws {
        try Self.writeConfig(config, socket: socket, networkManagerCompat: true, standIns: standIns)
        try run([
            "busctl", "--address=\(address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "ReloadConfig"
        ])
    }

    private static func writeConfig(_ config: URL, socket: String, networkManagerCompat: Bool, standIns: [String]) throws {
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <deny own="*"/>
            <deny send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_requested_reply="true" send_type="method_return"/>
            <allow send_requested_reply="true" send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
            <allow receive_type="signal"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
          </policy>
          <policy user="root">\(standIns.map { "<allow own=\"\($0)\"/>" }.joined())</policy>
          <include>\(Self.policyFile)</include>
          \(networkManagerCompat ? "<include>\(Self.compatPolicyFile)</include>" : "")
        </busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)
    }

    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
