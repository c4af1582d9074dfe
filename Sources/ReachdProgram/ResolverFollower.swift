import IPAddresses
import ReachabilityCore
import SDBus
import SystemCalls

/// The resolvers the daemon judges the path's `dns` against (docs/path.md, "DNS"):
/// systemd-resolved's over D-Bus while it answers and the default resolv.conf is
/// configured (it then points at resolved, or resolved is not the system's
/// resolver anyway), else the resolv.conf, followed with inotify on the loop.
/// `onChange` gets every change of the effective list.
final class ResolverFollower {
    private let loop: EventLoop
    private let onChange: (DNSServers?) -> Void
    private var resolvConf: ResolvConfWatch?
    private var resolvConfWatch: EventLoop.Watch?
    private var resolved: ResolvedServers?
    private var resolvedServers: DNSServers?
    private(set) var servers: DNSServers?

    init(loop: EventLoop, onChange: @escaping (DNSServers?) -> Void) {
        self.loop = loop
        self.onChange = onChange
    }

    /// Follows the resolv.conf at `path` (nil: DNS is not followed), at start and on reload.
    func follow(resolvConf path: String?) throws {
        resolvConfWatch = nil
        resolvConf = try path.map { try ResolvConfWatch(path: $0) }
        if let resolvConf {
            resolvConfWatch = try loop.onReadable(resolvConf.fileDescriptor.rawValue, of: resolvConf) { [unowned self] in
                if resolvConf.update() { changed() }
            }
        }
        changed()
    }

    /// Reads resolved's servers over `bus` too, and follows them.
    func followResolved(on bus: BusConnection) throws {
        resolved = try ResolvedServers(connection: bus) { [unowned self] servers in
            resolvedServers = servers.map { servers in
                DNSServers(
                    source: .resolved,
                    servers: servers.compactMap { server in
                        IPAddress(bytes: server.address).map {
                            DNSServers.Server(address: $0, link: server.interfaceIndex.map { .index($0) })
                        }
                    })
            }
            changed()
        }
    }

    private func changed() {
        var effective = resolvConf?.servers
        if let resolvedServers, resolvConf?.path == MonitorOptions.defaultResolvConf { effective = resolvedServers }
        guard effective != servers else { return }
        servers = effective
        onChange(effective)
    }
}
