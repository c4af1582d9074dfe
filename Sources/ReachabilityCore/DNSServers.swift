import IPAddresses
import SystemCalls
import TOML

/// The DNS resolvers the system is configured with, and where that was read:
/// what ``Path/DNS`` judges against the path (docs/path.md, "DNS").
package struct DNSServers: Equatable, Sendable {
    /// One configured server.
    package struct Server: Equatable, Sendable {
        package var address: IPAddress
        /// The interface the server is used through: a per-link server of
        /// systemd-resolved (its index), or an IPv6 link-local one's zone (its name).
        package var link: Link?

        package enum Link: Equatable, Sendable {
            case index(Int32)
            case name(String)
        }

        package init(address: IPAddress, link: Link? = nil) {
            self.address = address
            self.link = link
        }
    }

    package var source: Path.DNS.Source
    package var servers: [Server]

    package init(source: Path.DNS.Source, servers: [Server]) {
        self.source = source
        self.servers = servers
    }

    package static let none = DNSServers(source: .none, servers: [])

    /// The `nameserver` lines of a resolv.conf, in order (glibc reads at most three,
    /// but every one is reported). Unparseable lines are skipped, as glibc does.
    package static func parseResolvConf(_ text: String) -> [Server] {
        var servers: [Server] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver" else { continue }
            let word = words[1]
            let (text, zone) =
                word.firstIndex(of: "%").map { (String(word[..<$0]), String(word[word.index(after: $0)...])) } ?? (String(word), nil)
            // An empty zone ("fe80::1%") names no interface: the line is as unusable as a bad address.
            guard let address = IPAddress(text), zone?.isEmpty != true else { continue }
            let link: Server.Link? = zone.map { zone in Int32(zone).map { .index($0) } ?? .name(zone) }
            servers.append(Server(address: address, link: link))
        }
        return servers
    }

    /// systemd-resolved's stub listeners: a resolv.conf naming only these hands
    /// every query to resolved, whose own servers are the ones that matter.
    package static func isResolvedStub(_ address: IPAddress) -> Bool {
        address == IPAddress("127.0.0.53") || address == IPAddress("127.0.0.54")
    }

    /// Where systemd-resolved writes the servers it uses (its "uplink" resolv.conf).
    package static let resolvedUplinkFile = "/run/systemd/resolve/resolv.conf"

    /// The servers of the resolv.conf at `path`: when it points at resolved's stub
    /// and resolved's own list is there, that list (source `resolved`), else the file's.
    /// Source `none` when the file cannot be read.
    package static func read(resolvConf path: String, resolvedUplink: String = resolvedUplinkFile) -> DNSServers {
        guard let file = text(of: path) else { return .none }
        let servers = parseResolvConf(file)
        if !servers.isEmpty, servers.allSatisfy({ isResolvedStub($0.address) }), let uplink = text(of: resolvedUplink) {
            return DNSServers(source: .resolved, servers: parseResolvConf(uplink))
        }
        return DNSServers(source: .resolvConf, servers: servers)
    }

    /// A resolv.conf is written by others (DHCP hooks, VPN clients): read whole, but
    /// at most 64 KiB, and never from a FIFO someone put there.
    private static func text(of path: String) -> String? {
        guard let bytes = try? SmallFile.read(path, limit: 64 << 10) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The files whose change may change `read(resolvConf:)`: the file, the target
    /// of its symlink (often replaced by rename), and resolved's own list.
    package static func files(resolvConf path: String) -> [String] {
        var files = [path, resolvedUplinkFile]
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            let target = String(cString: resolved)
            if target != path { files.append(target) }
        }
        return files
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Follows the resolv.conf a monitor reads: re-reads it when it, its symlink's
/// target or resolved's list is written, replaced or removed.
package final class ResolvConfWatch {
    package let path: String
    private let watch: FileChangeWatch
    package private(set) var servers: DNSServers

    package init(path: String) throws(SystemCallError) {
        self.path = path
        watch = try FileChangeWatch()
        watch.follow(DNSServers.files(resolvConf: path))
        servers = DNSServers.read(resolvConf: path)
    }

    package var fileDescriptor: FileDescriptor { watch.fileDescriptor }

    /// After the descriptor was readable: true when the servers changed.
    package func update() -> Bool {
        guard watch.drain() else { return false }
        // The symlink may point elsewhere now, or a directory was made again.
        watch.follow(DNSServers.files(resolvConf: path))
        let fresh = DNSServers.read(resolvConf: path)
        guard fresh != servers else { return false }
        servers = fresh
        return true
    }
}
