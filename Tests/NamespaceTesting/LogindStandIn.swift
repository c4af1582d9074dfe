import Foundation

/// A stand-in for systemd-logind on a test's system bus: it owns
/// `org.freedesktop.login1` (the bus must let root own it: `TestSystemBus(standIns:)`)
/// and emits the real `PrepareForSleep(b)` signal of `org.freedesktop.login1.Manager`
/// when told, through GLib's D-Bus (python3-gi), as logind does before and after sleep.
public final class LogindStandIn {
    static let source = """
        import sys
        from gi.repository import Gio, GLib
        bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
        reply = bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                              GLib.Variant("(su)", ("org.freedesktop.login1", 4)), GLib.VariantType("(u)"), 0, -1, None)
        print("owner" if reply.unpack()[0] == 1 else "refused", flush=True)
        for line in sys.stdin:
            bus.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                            GLib.Variant("(b)", (line.strip() == "sleep",)))
            bus.flush_sync(None)
            print("sent", line.strip(), flush=True)
        """

    let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    /// Starts it on the bus at `address` and waits until it owns the name.
    public init(bus address: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", Self.source]
        process.environment = ["DBUS_SYSTEM_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let answer = try readLine()
        guard answer == "owner" else {
            stop()
            throw CommandFailure(
                command: ["logind stand-in"],
                result: CommandResult(status: -1, output: answer, error: "does not own org.freedesktop.login1"))
        }
    }

    /// `PrepareForSleep(true)`: the host is about to sleep.
    public func sleep() throws { try send("sleep") }
    /// `PrepareForSleep(false)`: the host woke up.
    public func resume() throws { try send("resume") }

    private func send(_ word: String) throws {
        input.fileHandleForWriting.write(Data((word + "\n").utf8))
        _ = try readLine()
    }

    /// One line of its output (it answers each command with one).
    private func readLine() throws -> String {
        var line: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else {
                throw CommandFailure(
                    command: ["logind stand-in"],
                    result: CommandResult(status: -1, output: String(decoding: line, as: UTF8.self), error: "exited"))
            }
            if first == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(first)
        }
    }

    public func stop() {
        stopServer(process)
    }
}
