import CTestSupport
import Foundation
import Netlink
import Synchronization

private let namespaceCounter = Atomic<Int>(0)

/// A network namespace made for one test, with a unique name, removed when the
/// test ends (`withNamespaces`), whether it passed or not.
public final class TestNamespace: Sendable {
    public let name: String
    private let tunnels = Mutex<[Int32]>([])

    /// Creates the namespace with loopback up and IPv6 duplicate address detection
    /// off: with DAD, every new interface's link-local address is announced a second
    /// or two later, a change that would land at a random moment of the test.
    public init(_ label: String) throws {
        let number = namespaceCounter.add(1, ordering: .relaxed).newValue
        name = "rd-\(label.prefix(10))-\(getpid())-\(number)"
        try run(["ip", "netns", "add", name])
        do {
            try ip("link set dev lo up")
            try sysctl("net.ipv6.conf.all.accept_dad=0")
            try sysctl("net.ipv6.conf.default.accept_dad=0")
        } catch {
            remove()
            throw error
        }
    }

    /// The path that holds the namespace open, for `MonitorOptions.networkNamespace`.
    public var path: String { "/run/netns/\(name)" }

    /// Runs `ip -n NAME …`; words are split on spaces.
    @discardableResult
    public func ip(_ command: String) throws -> String {
        try run(["ip", "-n", name] + command.split(separator: " ").map(String.init)).output
    }

    /// Sets a sysctl inside the namespace ("net.ipv6.conf.eth0.accept_dad=1").
    public func sysctl(_ assignment: String) throws {
        try exec(["sysctl", "-q", "-w", assignment])
    }

    /// Runs many `ip` commands in one process (`ip -batch`), much faster than one by one.
    public func ipBatch(_ commands: [String]) throws {
        try run(["ip", "-n", name, "-batch", "-"], input: commands.joined(separator: "\n") + "\n")
    }

    /// Runs a program inside the namespace (`ip netns exec`, which also mounts its sysfs).
    @discardableResult
    public func exec(_ arguments: [String], check: Bool = true) throws -> CommandResult {
        try run(["ip", "netns", "exec", name] + arguments, check: check)
    }

    /// Creates tun device `device` in the namespace and holds it open, so it has
    /// carrier, as a VPN client would; it is closed when the namespace is removed.
    public func openTun(_ device: String) throws {
        // errno is the opening thread's: read it there.
        let (descriptor, error) = try NetworkNamespace(name: name).perform { (reachd_test_open_tun(device), errno) }
        guard descriptor >= 0 else { throw NetlinkError.system(operation: "opening tun \(device)", errno: error) }
        tunnels.withLock { $0.append(descriptor) }
    }

    /// Deletes the namespace and everything in it. Safe to call twice.
    public func remove() {
        tunnels.withLock { descriptors in
            descriptors.forEach { close($0) }
            descriptors.removeAll()
        }
        _ = try? run(["ip", "netns", "del", name], check: false)
    }

    deinit { remove() }
}

/// Runs `body` with fresh namespaces named after `labels`, and removes them all afterwards.
public func withNamespaces<T>(_ labels: String..., body: ([TestNamespace]) async throws -> T) async throws -> T {
    var namespaces: [TestNamespace] = []
    defer { namespaces.forEach { $0.remove() } }
    for label in labels { namespaces.append(try TestNamespace(label)) }
    return try await body(namespaces)
}

extension TestNamespace {
    /// Gives this namespace an uplink: veth `device` here, its peer `peer` in
    /// `router` with `.1` of the /24, this side `.2`, and a default route via `.1`
    /// unless `defaultRoute` is false. Carrier follows the peer, as with a cable.
    public func addUplink(
        _ device: String = "eth0", subnet: String = "10.1.0", router: TestNamespace,
        peer: String = "up0", defaultRoute: Bool = true
    ) throws {
        try addVeth(device, "\(subnet).2/24", to: router, peer, "\(subnet).1/24", defaultRoute: defaultRoute ? "\(subnet).1" : nil)
    }

    /// Veth `device` with `address`, its peer in `router` with `routerAddress`, a default route via `gateway`.
    private func addVeth(
        _ device: String, _ address: String, to router: TestNamespace, _ peer: String, _ routerAddress: String,
        defaultRoute gateway: String?
    ) throws {
        try ip("link add name \(device) type veth peer name \(peer) netns \(router.name)")
        try ip("addr add \(address) dev \(device)")
        try ip("link set dev \(device) up")
        try router.ip("addr add \(routerAddress) dev \(peer)")
        try router.ip("link set dev \(peer) up")
        if let gateway { try ip("route add default via \(gateway) dev \(device)") }
        try waitUntilOperational(device)
    }

    /// Waits until `device` is operational ("state UP"). The kernel sets a link's operational state
    /// after `ip link set up` has returned (linkwatch, a work queue, later when the machine is busy):
    /// a test that reads a path at once would otherwise see "no carrier" instead of what it set up.
    public func waitUntilOperational(_ device: String, timeout: Duration = .seconds(5)) throws {
        let deadline = ContinuousClock.now + timeout
        while try !ip("-o link show dev \(device)").contains(" state UP ") {
            guard ContinuousClock.now < deadline else {
                throw CommandFailure(
                    command: ["ip", "-n", name, "link", "show", "dev", device],
                    result: CommandResult(status: -1, output: "", error: "not operational after \(timeout)"))
            }
            usleep(5_000)
        }
    }
}

extension TestNamespace {
    /// Waits until something in this namespace listens on TCP (`ss` filter, e.g.
    /// "sport = :8443"); kills `server` and throws if nothing does (`waitUntilListening`).
    public func waitUntilListening(_ filter: String, server: Process) async throws {
        try await NamespaceTesting.waitUntilListening(filter, server: server) { try exec($0) }
    }
}

/// Waits up to 30 s until something listens on TCP (`ss` filter, e.g. "sport = :8443"),
/// as `ss` run by `run` sees it (this namespace's by default); kills `server` and throws
/// if nothing does, or once it exited. (A Python server, started while the whole suite
/// runs on two CPUs, once took more than 10 s.)
public func waitUntilListening(
    _ filter: String, server: Process, run: ([String]) throws -> CommandResult = { try NamespaceTesting.run($0) }
) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while try run(["ss", "-Hltn", filter]).output.isEmpty {
        guard ContinuousClock.now < deadline, server.isRunning else {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            throw CommandFailure(
                command: server.arguments ?? [], result: CommandResult(status: -1, output: "", error: "not listening"))
        }
        try await Task.sleep(for: .milliseconds(25))
    }
}

extension TestNamespace {
    /// Runs the Python program `source` (saved as `name` in `directory`) in this namespace with
    /// `arguments`, its output discarded: the test servers' way to start. Stop it with `stopServer`.
    public func startPython(_ source: String, named name: String, in directory: URL, arguments: [String]) throws -> Process {
        let script = directory.appendingPathComponent(name)
        try source.write(to: script, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ip", "netns", "exec", self.name, "/usr/bin/python3", script.path] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }
}

/// Stops a test server for good (SIGKILL), and reaps it.
public func stopServer(_ process: Process) {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
}

extension TestNamespace {
    /// Gives this namespace an IPv6-only uplink, as on a 464XLAT or NAT64 network: veth
    /// `device` with `PREFIX::2/64`, its peer `peer` in `router` with `PREFIX::1/64`, and
    /// a default route via `PREFIX::1` unless `defaultRoute` is false (a router's
    /// advertisements are then the way to one). No IPv4 at all.
    public func addIPv6OnlyUplink(
        _ device: String = "eth0", prefix: String = "2001:db8:1", router: TestNamespace,
        peer: String = "up0", defaultRoute: Bool = true
    ) throws {
        // Duplicate address detection is off in test namespaces: the addresses are usable at once.
        try addVeth(device, "\(prefix)::2/64", to: router, peer, "\(prefix)::1/64", defaultRoute: defaultRoute ? "\(prefix)::1" : nil)
    }

    /// A CLAT as clatd and tayga set one up: tun `device` held open (carrier), RFC 7335's
    /// 192.0.0.1/29 on it, and the IPv4 default route through it.
    public func addCLAT(_ device: String = "clat", held: Bool = true) throws {
        if held { try openTun(device) } else { try ip("tuntap add dev \(device) mode tun") }
        try ip("addr add 192.0.0.1/29 dev \(device)")
        try ip("link set dev \(device) up")
        try ip("route add default via 192.0.0.2 dev \(device)")
    }
}
