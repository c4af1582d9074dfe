import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real IPv6-only network with NAT64 and DNS64, and optionally a CLAT on the host
/// (464XLAT, RFC 6877), from Debian's packages: tayga as the NAT64 in `gateway` and
/// as the CLAT in `host`, unbound's dns64 module as the gateway's resolver, and an
/// IPv4-only web server in `internet`. Traffic stays inside the three namespaces.
///
/// host eth0 2001:db8:1::2 ─ gateway up0 2001:db8:1::1 (NAT64 2001:db8:64::/96, DNS64)
///                           gateway out0 192.0.2.1 ─ internet eth0 192.0.2.80 (HTTP)
public final class XLATNetwork {
    /// The NAT64's prefix (network-specific: tayga refuses to put private IPv4 in the well-known one).
    public static let prefix = "2001:db8:64::/96"
    /// The IPv4-only server, and its name in the DNS64's zone.
    public static let server = "192.0.2.80"
    public static let serverName = "probe.test"
    /// What the server answers: a connectivity probe's `response`.
    public static let page = "reachd-xlat-ok\n"

    let host: TestNamespace
    let directory: URL
    private var processes: [Process] = []
    private var clat: Process?
    private let resolvConf: URL

    /// Builds the network; the host's resolver is the gateway's DNS64 (its
    /// /etc/netns resolv.conf, which `ip netns exec` mounts over /etc/resolv.conf).
    /// `realIPv6ForWellKnownName`: `ipv4only.arpa` has an IPv6 address of its own in the
    /// zone, so the DNS64 answers with it instead of a synthesis (bad input for RFC 7050).
    public init(
        host: TestNamespace, gateway: TestNamespace, internet: TestNamespace, directory: URL,
        realIPv6ForWellKnownName: Bool = false
    ) throws {
        self.host = host
        self.directory = directory
        resolvConf = URL(fileURLWithPath: "/etc/netns/\(host.name)")
        try host.addIPv6OnlyUplink(router: gateway)
        try gateway.ipBatch([
            "link add name out0 type veth peer name eth0 netns \(internet.name)",
            "addr add 192.0.2.1/24 dev out0", "link set dev out0 up"
        ])
        try internet.ipBatch(["addr add \(Self.server)/24 dev eth0", "link set dev eth0 up", "route add default via 192.0.2.1"])
        try gateway.sysctl("net.ipv4.ip_forward=1")
        try gateway.sysctl("net.ipv6.conf.all.forwarding=1")
        do {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("nat64"), withIntermediateDirectories: true)
            let nat64 = try write(
                "nat64.conf",
                """
                tun-device nat64
                ipv4-addr 198.18.255.1
                prefix \(Self.prefix)
                dynamic-pool 198.18.255.0/24
                data-dir \(directory.appendingPathComponent("nat64").path)
                """)
            try gateway.exec(["tayga", "-c", nat64.path, "--mktun"])
            try gateway.ipBatch(["link set dev nat64 up", "route add 198.18.255.0/24 dev nat64", "route add \(Self.prefix) dev nat64"])
            processes.append(try start(in: gateway, ["tayga", "-c", nat64.path, "--nodetach"]))
            try startResolver(in: gateway, realIPv6ForWellKnownName: realIPv6ForWellKnownName)
            let site = directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
            try Self.page.write(to: site.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
            processes.append(
                try start(in: internet, ["python3", "-m", "http.server", "80", "--bind", Self.server, "--directory", site.path]))
            try FileManager.default.createDirectory(at: resolvConf, withIntermediateDirectories: true)
            try "nameserver 2001:db8:1::1\n".write(to: resolvConf.appendingPathComponent("resolv.conf"), atomically: true, encoding: .utf8)
        } catch {
            stop()
            throw error
        }
    }

    /// unbound with its dns64 module: `ipv4only.arpa` (RFC 7050) and the server's name
    /// have only A records, served from zones it reads as if from upstream, so that the
    /// dns64 module synthesises their AAAA.
    private func startResolver(in gateway: TestNamespace, realIPv6ForWellKnownName: Bool) throws {
        let arpa = try write(
            "ipv4only.arpa.zone",
            """
            $ORIGIN ipv4only.arpa.
            @ 3600 IN SOA ns.ipv4only.arpa. hostmaster.ipv4only.arpa. 1 3600 600 86400 60
            @ 3600 IN NS ns.ipv4only.arpa.
            @ 3600 IN A 192.0.0.170
            @ 3600 IN A 192.0.0.171
            ns 3600 IN A 192.0.2.53
            \(realIPv6ForWellKnownName ? "@ 3600 IN AAAA 2001:db8:99::1" : "")
            """)
        let test = try write(
            "test.zone",
            """
            $ORIGIN test.
            @ 3600 IN SOA ns.test. hostmaster.test. 1 3600 600 86400 60
            @ 3600 IN NS ns.test.
            ns 3600 IN A 192.0.2.53
            probe 60 IN A \(Self.server)
            """)
        let config = try write(
            "unbound.conf",
            """
            server:
              interface: 2001:db8:1::1
              access-control: ::/0 allow
              chroot: ""
              username: ""
              directory: "\(directory.path)"
              pidfile: ""
              use-syslog: no
              module-config: "dns64 iterator"
              dns64-prefix: \(Self.prefix)
              local-zone: "test." nodefault
            auth-zone:
              name: "ipv4only.arpa."
              zonefile: "\(arpa.path)"
              for-upstream: yes
              for-downstream: no
            auth-zone:
              name: "test."
              zonefile: "\(test.path)"
              for-upstream: yes
              for-downstream: no
            """)
        processes.append(try start(in: gateway, ["unbound", "-d", "-c", config.path]))
        let deadline = ContinuousClock.now + .seconds(10)
        while try gateway.exec(["ss", "-Hlun", "sport = :53"]).output.isEmpty {
            guard ContinuousClock.now < deadline else {
                throw CommandFailure(command: ["unbound"], result: CommandResult(status: -1, output: "", error: "not listening after 10 s"))
            }
            usleep(20_000)
        }
    }

    /// Starts the host's CLAT, as clatd sets tayga up: tun `clat` with 192.0.0.1/29 and the
    /// IPv4 default route, the CLAT's own IPv6 address routed into it and proxied on eth0.
    public func startCLAT() throws {
        let config = try write(
            "clat.conf",
            """
            tun-device clat
            ipv4-addr 192.0.0.2
            prefix \(Self.prefix)
            map 192.0.0.1 2001:db8:1::c
            data-dir \(directory.path)
            """)
        try host.exec(["tayga", "-c", config.path, "--mktun"])
        try host.sysctl("net.ipv6.conf.all.forwarding=1")
        try host.sysctl("net.ipv6.conf.eth0.proxy_ndp=1")
        try host.ipBatch([
            "link set dev clat up", "addr add 192.0.0.1/29 dev clat", "route add default via 192.0.0.2 dev clat",
            "route add 2001:db8:1::c/128 dev clat", "neigh add proxy 2001:db8:1::c dev eth0"
        ])
        clat = try start(in: host, ["tayga", "-c", config.path, "--nodetach"])
    }

    /// Stops the CLAT's process: its tun keeps its address and routes, without carrier.
    public func stopCLAT() {
        if let clat { stopServer(clat) }
        clat = nil
    }

    public func stop() {
        stopCLAT()
        processes.forEach(stopServer)
        processes = []
        try? FileManager.default.removeItem(at: resolvConf)
    }

    private func write(_ name: String, _ text: String) throws -> URL {
        let file = directory.appendingPathComponent(name)
        try (text + "\n").write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    private func start(in namespace: TestNamespace, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ip", "netns", "exec", namespace.name] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }
}
