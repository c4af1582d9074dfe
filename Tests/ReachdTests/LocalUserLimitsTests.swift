import Foundation
import NamespaceTesting
import ReachabilityClient
import TestTraits
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/security.md, limits against local users: the private socket is world-connectable, so a hostile
/// local user (here `nobody`, through `setpriv`) tries to starve the daemon.
@Suite(
    "limits against local users", .serialized, .needsRoot("it runs reachd and reachctl as other users"), .ownThreads,
    .machineAlone)
struct LocalUserLimitsTests {
    let object = ["io.reachd.Reachability1", "/io/reachd/Reachability1", "io.reachd.Reachability1"]

    /// Opens COUNT connections to SOCKET as the user it runs as, authenticating
    /// each (AUTH EXTERNAL, BEGIN) unless told `silent`; prints how many it holds,
    /// then never reads. With `wait-eof` it prints, per connection, when the daemon closed it.
    static let peers = """
        import os, resource, socket, sys, time
        path, count, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        auth = b"\\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\\r\\nBEGIN\\r\\n"
        held = []
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                if mode != "silent": s.sendall(auth)
            except OSError:
                s.close()
                continue
            held.append(s)
        print(len(held), flush=True)
        if mode == "silent":
            start = time.monotonic()
            s = held[0]
            s.settimeout(30)
            print("closed after %.1f s" % (time.monotonic() - start) if s.recv(1) == b"" else "answered", flush=True)
        sys.stdin.read()
        """

    @Test(
        "/tmp/reachd-UID created first by another user: the user's reachd refuses to serve there and its reachctl to trust it; once the directory is the user's own, both use it",
        .timeLimit(.minutes(2)))
    func foreignFallbackDirectory() async throws {
        let user = 61_234 // no account needed: setpriv runs as any uid
        let directory = "/tmp/reachd-\(user)"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withScratch { scratch in
            try await withNamespaces("rdtmpdir", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                // Another user (root here) made the directory first and serves a daemon of its own in it.
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: false,
                    attributes: [.posixPermissions: 0o755])
                let impostor = try DaemonProcess(
                    in: ns[0], directory: scratch, arguments: ["--bus", "none", "--socket", "\(directory)/bus"])
                defer { Task { await impostor.stop() } }
                #expect(
                    await eventually {
                        (try? ReachabilityClient(endpoint: .address("unix:path=\(directory)/bus")).blocking.currentPath()) != nil
                    },
                    "\(impostor.log)")
                let asUser = [
                    "ip", "netns", "exec", ns[0].name, "setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups", "env", "-i"
                ]

                let refused = try run(asUser + [DaemonProcess.binary, "--bus", "none", "--config", "/nonexistent"], check: false)
                #expect(refused.status == 1, "\(refused)")
                #expect(
                    refused.error.contains(
                        "\(directory) belongs to uid 0, not to uid \(user): refusing a socket directory another user created"), "\(refused)"
                )
                let status = try run(asUser + [DaemonProcess.reachctl, "status", "--json"], check: false)
                #expect(status.status == 0 && status.output.contains(#""source":"direct""#), "the impostor is not asked: \(status)")

                // The user's own directory: served, and read.
                await impostor.stop()
                try FileManager.default.removeItem(atPath: directory)
                let daemon = Process()
                daemon.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                daemon.arguments = asUser + [DaemonProcess.binary, "--bus", "none", "--config", "/nonexistent"]
                daemon.standardOutput = FileHandle.nullDevice
                daemon.standardError = FileHandle.nullDevice
                try daemon.run()
                defer { kill(daemon.processIdentifier, SIGTERM); daemon.waitUntilExit() }
                #expect(
                    try await eventually {
                        try run(asUser + [DaemonProcess.reachctl, "status", "--json"], check: false).output.contains(#""source":"daemon""#)
                    })
                var owner = stat()
                #expect(lstat(directory, &owner) == 0 && owner.st_uid == uid_t(user))
            }
        }
    }

    /// Adds and removes 10.9.0.9/32 on DEVICE, COUNT changes in all, over rtnetlink
    /// (one `ip` process per change would take minutes).
    static let flap = """
        import socket, struct, sys, time
        index, count = socket.if_nametoindex(sys.argv[1]), int(sys.argv[2])
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        address = socket.inet_aton("10.9.0.9")
        for number in range(count):
            add = number % 2 == 0
            body = struct.pack("=BBBBI", socket.AF_INET, 32, 0, 0, index)
            body += struct.pack("=HH4s", 8, 2, address) + struct.pack("=HH4s", 8, 1, address)  # IFA_LOCAL, IFA_ADDRESS
            flags = 0x1 | 0x4 | (0x400 | 0x200 if add else 0)  # REQUEST, ACK, CREATE|EXCL
            sock.send(struct.pack("=IHHII", 16 + len(body), 20 if add else 21, flags, number + 1, 0) + body)
            answer = sock.recv(65536)
            error = struct.unpack_from("=i", answer, 16)[0]
            if error: sys.exit("change %d: errno %d" % (number, -error))
            time.sleep(0.0003)
        """

    /// The peers script as `nobody`; its stdin held open until `stop`.
    final class HostilePeers {
        let process = Process()
        let input = Pipe()
        let output: URL

        init(socket: String, count: Int, mode: String, in directory: URL) throws {
            let script = directory.appendingPathComponent("peers.py")
            try LocalUserLimitsTests.peers.write(to: script, atomically: true, encoding: .utf8)
            chmod(script.path, 0o644)
            output = directory.appendingPathComponent("peers-\(UUID()).txt")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            // Root's peers would be root's: they are another user's, as the limits are per user.
            process.executableURL = URL(fileURLWithPath: getuid() == 0 ? "/usr/bin/setpriv" : "/usr/bin/python3")
            process.arguments =
                (getuid() == 0 ? ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3"] : [])
                + [script.path, socket, String(count), mode]
            process.standardInput = input
            process.standardOutput = try FileHandle(forWritingTo: output)
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        var lines: [String] { ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    @Test(
        "3,000 connections of one user under a 1,024-descriptor limit: trust still re-validated, root still served",
        .timeLimit(.minutes(3)))
    func connectionFlood() async throws {
        try await withScratch { scratch in
            chmod(scratch.path, 0o755)
            try PinnedServer.makePKI(in: scratch)
            let config = try PinnedServer.config(pins: try PinnedServer.pins(in: scratch), in: scratch)
            try await withNamespaces("rdflood", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let server = try await PinnedServer.serve(in: ns[1], from: scratch)
                defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
                let daemon = try DaemonProcess(
                    in: ns[0], directory: scratch, arguments: ["--bus", "none", "--config", config.path],
                    wrapper: ["prlimit", "--nofile=1024:1024"])
                defer { Task { await daemon.stop() } }
                func count(_ text: String) -> Int { daemon.log.components(separatedBy: text).count - 1 }
                #expect(await eventually(.seconds(20)) { count("trust: ok") == 1 }, "\(daemon.log)")

                let peers = try HostilePeers(socket: daemon.socket, count: 3000, mode: "authenticated", in: scratch)
                defer { peers.stop() }
                #expect(await eventually(.seconds(60)) { !peers.lines.isEmpty }, "the hostile peers never finished connecting")
                try await Task.sleep(for: .seconds(1))
                #expect(count("closed connections of uid 65534") == 1, "refused, and said once a minute: \(daemon.log.suffix(2000))")

                // Root is served by the daemon, not by the direct fallback.
                let root = try await ReachabilityClient(endpoint: .address(daemon.address)).currentPath()
                #expect(root.source == .daemon && root.status == .wired)
                let ctl = try ns[0].exec([DaemonProcess.reachctl, "status", "--json", "--bus", daemon.socket])
                #expect(ctl.output.contains("\"source\":\"daemon\""), "\(ctl.output)")

                // Path changes still start trust rounds (each needs pipes and a socket):
                // the verdict is checked again, at a later time.
                func trustStatus() throws -> String { try daemon.busctl(["call"] + object + ["TrustStatus"]).output }
                let before = try trustStatus()
                try ns[0].ip("route del default")
                try ns[0].ip("route add default via 10.1.0.1")
                // Two path changes: at least one more round (rounds start 2 s apart at least; the second change may join the first's).
                #expect(await eventually(.seconds(20)) { count("trust: checking") >= 2 }, "\(daemon.log.suffix(2000))")
                #expect(
                    await eventually(.seconds(20)) {
                        let now = (try? trustStatus()) ?? before; return now != before && now.contains("trusted")
                    },
                    "\(daemon.log.suffix(2000))")
                #expect(!daemon.log.contains("Too many open files"))
                let resident = daemon.residentKilobytes
                #expect(resident > 0 && resident < 24 * 1024, "reachd's RSS: \(resident) kB")
                print("limits: flood of 3,000 connections: reachd RSS \(resident) kB")
            }
        }
    }

    @Test(
        "a subscriber that never reads, 10,000 changes: dropped, memory bounded, the others end on the last change",
        .timeLimit(.minutes(3)))
    func slowSubscriber() async throws {
        try await withScratch { scratch in
            chmod(scratch.path, 0o755)
            try await withNamespaces("rdslow", "router") { ns in
                try ns[0].addUplink(router: ns[1])
                let daemon = try DaemonProcess(in: ns[0], directory: scratch, arguments: ["--bus", "none"])
                defer { Task { await daemon.stop() } }
                try await daemon.waitUntilServing()
                let peers = try HostilePeers(socket: daemon.socket, count: 1, mode: "authenticated", in: scratch)
                defer { peers.stop() }
                #expect(await eventually { peers.lines == ["1"] })

                var watchers: [(Process, URL)] = []
                for index in 0..<2 {
                    let file = scratch.appendingPathComponent("watch-\(index).jsonl")
                    _ = FileManager.default.createFile(atPath: file.path, contents: nil)
                    let watch = Process()
                    watch.executableURL = URL(fileURLWithPath: DaemonProcess.reachctl)
                    watch.arguments = ["watch", "--json", "--bus", daemon.socket]
                    watch.standardOutput = try FileHandle(forWritingTo: file)
                    watch.standardError = FileHandle.nullDevice
                    try watch.run()
                    watchers.append((watch, file))
                }
                defer { for (watch, _) in watchers { kill(watch.processIdentifier, SIGKILL); watch.waitUntilExit() } }
                func lines(_ file: URL) -> [Substring] {
                    ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n")
                }
                #expect(await eventually { watchers.allSatisfy { lines($0.1).count == 1 } })

                // 10,000 changes of the document: an address added and removed 5,000 times,
                // each acknowledged by the kernel before the next, a little apart so that
                // the daemon publishes each rather than one for a burst.
                let flap = scratch.appendingPathComponent("flap.py")
                try Self.flap.write(to: flap, atomically: true, encoding: .utf8)
                let started = ContinuousClock.now
                try ns[0].exec(["/usr/bin/python3", flap.path, "eth0", "10000"])
                let flapping = started.duration(to: .now)
                try ns[0].ip("address add 10.9.0.7/32 dev eth0") // the last change: the final document has it
                let final = { (try? ReachabilityClient(endpoint: .address(daemon.address)).blocking.currentPath()) }
                #expect(
                    await eventually(.seconds(60)) {
                        watchers.allSatisfy { lines($0.1).last?.contains("10.9.0.7/32") == true }
                    }, "\(daemon.log.suffix(2000))")
                let counts = watchers.map { lines($0.1).count }
                // Both read as fast as they can; a change that finds a socket full is
                // coalesced into the next one that fits (docs/api.md, "What subscribers are sent").
                #expect(lines(watchers[0].1).last == lines(watchers[1].1).last, "both end on the same document: \(counts)")
                #expect(final()?.interfaces.contains { $0.addresses.contains("10.9.0.7/32") } == true)
                #expect(
                    await eventually(.seconds(20)) { daemon.log.contains("that does not read (behind for") },
                    "the silent subscriber is dropped once its socket stayed full for 10 s: \(daemon.log.suffix(2000))")
                let resident = daemon.residentKilobytes
                #expect(resident > 0 && resident < 24 * 1024, "reachd's RSS: \(resident) kB")
                print(
                    "limits: 10,000 address changes in \(flapping): \(counts[0] - 1) and \(counts[1] - 1) delivered to two watchers, the silent one dropped; reachd RSS \(resident) kB"
                )
                // How many of the 10,000 are published one by one depends on the machine's
                // load (7,273 idle, 4,295 beside two fuzzers, 988 beside a build and 2,000
                // gdbus calls); what the test needs is far more than the silent peer can hold:
                // 256 KiB of socket buffer and one message, about 250 documents of this size.
                let held = 256 * 1024 / max(1, lines(watchers[0].1).last?.utf8.count ?? 1)
                #expect(counts[0] > 2 * held, "\(counts[0] - 1) published; the silent peer holds about \(held)")
            }
        }
    }
}
