import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real toolkit client (Tests/ToolkitClients: GLib's GNetworkMonitor through
/// PyGObject, Qt's QNetworkInformation through PyQt6) running in a namespace
/// against a given system bus, and every view it printed: one JSON line at start
/// and one per notification, decoded as `View`.
public final class ToolkitClient<View: Decodable & Sendable>: @unchecked Sendable {
    public static var glibScript: String { script("glib-network-monitor.py") }
    public static var qtScript: String { script("qt-network-information.py") }

    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ToolkitClients/\(name)").path
    }

    private let process = Process()
    private let lock = NSLock()
    private var received: [View] = []
    private var unreadable: [String] = []

    /// Starts `script` with the apt Python (whose gi and PyQt6 modules it needs) in `namespace`.
    public init(_ script: String, in namespace: TestNamespace, systemBus: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ip", "netns", "exec", namespace.name, "env", "DBUS_SYSTEM_BUS_ADDRESS=\(systemBus)",
            "QT_QPA_PLATFORM=offscreen", "/usr/bin/python3", script
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let reader = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            var pending = Data()
            while true {
                let chunk = reader.availableData
                guard !chunk.isEmpty else { return }
                pending += chunk
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = pending[pending.startIndex..<newline]
                    pending = pending[(newline + 1)...]
                    lock.withLock {
                        if let view = try? JSONDecoder().decode(View.self, from: line) {
                            received.append(view)
                        } else {
                            unreadable.append(String(decoding: line, as: UTF8.self))
                        }
                    }
                }
            }
        }
    }

    /// Every view so far, oldest first.
    public var views: [View] { lock.withLock { received } }
    public var latest: View? { views.last }
    /// Lines that were not a view (a backend that did not load says so).
    public var otherLines: [String] { lock.withLock { unreadable } }
    public var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }

    public func stop() {
        guard process.isRunning else { return }
        // `ip netns exec` and env exec: the pid is Python's.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// What GLib's `GNetworkMonitor` says, as the GLib client prints it.
public struct GLibView: Decodable, Sendable, Equatable {
    public var event: String
    public var backend: String
    public var available: Bool
    public var connectivity: String
    public var metered: Bool
    /// CLOCK_MONOTONIC when the client printed it, in seconds.
    public var clock: Double

    public init(available: Bool, connectivity: String, metered: Bool) {
        (event, backend, self.available, self.connectivity, self.metered, clock) = ("", "", available, connectivity, metered, 0)
    }

    /// The three properties, each by name.
    public var properties: [String: String] {
        ["network-available": "\(available)", "connectivity": connectivity, "network-metered": "\(metered)"]
    }
}

/// What Qt's `QNetworkInformation` says, as the Qt client prints it.
public struct QtView: Decodable, Sendable, Equatable {
    public var event: String
    public var backend: String
    public var reachability: String
    public var portal: Bool
    public var medium: String
    public var metered: Bool
    public var clock: Double

    public init(reachability: String, portal: Bool, medium: String, metered: Bool) {
        (event, backend, self.reachability, self.portal, self.medium, self.metered, clock) = (
            "", "", reachability, portal, medium, metered, 0
        )
    }

    public var properties: [String: String] {
        ["reachability": reachability, "portal": "\(portal)", "medium": medium, "metered": "\(metered)"]
    }
}
