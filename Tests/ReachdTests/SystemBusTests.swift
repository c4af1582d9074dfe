import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(
    "reachd on a dbus-daemon (system-type config with the project's policy)", .serialized, .needsSystemBusName, .ownThreads)
struct SystemBusTests {
    let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]

    @Test(
        "the bus's broker killed and started again on the same socket: reachd exits non-zero at once (systemd restarts it), and a new reachd owns the name again",
        .timeLimit(.minutes(2)))
    func brokerRestart() async throws {
        try await withScratch { scratch in
            var bus = try TestSystemBus(directory: scratch)
            defer { bus.stop() }
            try await withNamespaces("rdbroker", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                var daemon = try DaemonProcess(
                    in: ns[0], directory: scratch.appendingPathComponent("first"), arguments: ["--bus", bus.address])
                defer { Task { [daemon] in await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await eventually { daemon.log.contains("owning io.reachd.Reachability1") }, "\(daemon.log)")

                let killed = ContinuousClock.now
                bus.stop()
                #expect(await eventually(.seconds(5)) { !daemon.process.isRunning }, "\(daemon.log)")
                print("broker restart: reachd exited \(killed.duration(to: .now)) after the broker was killed")
                #expect(daemon.process.terminationStatus == 69, "EX_UNAVAILABLE: Restart=on-failure restarts it")
                #expect(
                    daemon.log.contains(
                        "lost \(bus.address) (its broker went away): exiting so that the service manager starts reachd again"),
                    "\(daemon.log)")

                // What systemd does next: the broker is back on its socket, reachd starts again and owns its name.
                try? FileManager.default.removeItem(at: scratch.appendingPathComponent("system_bus_socket"))
                bus = try TestSystemBus(directory: scratch)
                daemon = try DaemonProcess(
                    in: ns[0], directory: scratch.appendingPathComponent("second"), arguments: ["--bus", bus.address])
                try await daemon.waitUntilServing()
                #expect(
                    try await eventually {
                        try run(["busctl", "--address=\(bus.address)", "get-property"] + object + ["Status"], check: false).output
                            == "s \"wired\"\n"
                    }, "\(daemon.log)")
            }
        }
    }

    @Test("the name, properties, StatusChanged seen by busctl monitor, Reload denied to others; no other user may own the name")
    func onTheBus() async throws {
        try await withScratch { scratch in
            let bus = try TestSystemBus(directory: scratch)
            defer { bus.stop() }
            try await withNamespaces("rdbus", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", bus.address, "--config", "/nonexistent"])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                #expect(await eventually { daemon.log.contains("owning io.reachd.Reachability1") }, "\(daemon.log)")
                let busctl = ["busctl", "--address=\(bus.address)"]
                #expect(try run(busctl + ["get-property"] + object + ["Status"]).output == "s \"wired\"\n")

                // The project's client by name on that bus.
                let client = ReachabilityClient(endpoint: .address(bus.address))
                #expect(try await client.currentPath().status == .wired)

                let monitorOutput = scratch.appendingPathComponent("monitor.txt")
                _ = FileManager.default.createFile(atPath: monitorOutput.path, contents: nil)
                let monitor = Process()
                monitor.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                monitor.arguments =
                    busctl + ["monitor", "--match", "type='signal',interface='io.reachd.Reachability1',member='StatusChanged'"]
                monitor.standardOutput = try FileHandle(forWritingTo: monitorOutput)
                monitor.standardError = FileHandle.nullDevice
                try monitor.run()
                defer { kill(monitor.processIdentifier, SIGKILL); monitor.waitUntilExit() }
                try await Task.sleep(for: .milliseconds(300)) // the monitor's match is in place
                try ns[0].ip("route del default")
                #expect(
                    await eventually {
                        let text = (try? String(contentsOf: monitorOutput, encoding: .utf8)) ?? ""
                        return text.contains("Member=StatusChanged") && text.contains("STRING \"unreachable\"")
                    })

                let nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                let denied = try run(nobody + [DaemonProcess.reachctl, "reload", "--bus", bus.address], check: false)
                #expect(denied.status == 1)
                #expect(
                    denied.error == "reachctl: reload: Reload is for root only (AccessDenied)\n", "the daemon's check, past the bus policy")
                let readable = try run(nobody + busctl + ["get-property"] + object + ["Status"])
                #expect(readable.output == "s \"unreachable\"\n", "everyone may read")
                try run(busctl + ["call"] + object + ["Reload"])
                let squatter = try run(
                    nobody + busctl + [
                        "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                        "RequestName", "su", "io.reachd.Reachability1", "0"
                    ], check: false)
                #expect(squatter.status != 0 && squatter.error.contains("Access denied"), "\(squatter.error)")
            }
        }
    }
}
