import ArgumentParser
import ProgramSupport
import ReachabilityClient
import ReachabilityCore
import ReachctlSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// reachctl's entry point: the program is `reachctl`, or the installed multi-call binary under that name.
package func reachctlMain() async { await Reachctl.main() }

struct Reachctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachctl",
        abstract: "Query and watch network reachability.",
        discussion: """
            The status is the medium of the interface the kernel would use for the probe \
            addresses (IPv4 and IPv6; nothing is sent): wifi, wired, cellular, or \
            unreachable with a reason; unknown when the kernel cannot be asked.
            """,
        version: reachdVersion,
        subcommands: [StatusCommand.self, WatchCommand.self, WaitCommand.self, RouteCommand.self, TrustCommand.self, ReloadCommand.self]
    )

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if TrustCommand.isTLSCommand(arguments) { TrustCommand.runInHelper(arguments) }
        // `reachctl help trust check` is `reachctl trust check --help`, which reachd-trust answers.
        if arguments.first == "help", TrustCommand.isTLSCommand(Array(arguments.dropFirst())) {
            TrustCommand.runInHelper(Array(arguments.dropFirst(1).prefix(2)) + ["--help"])
        }
        await main(arguments)
    }
}

/// Whether a watcher that started without a daemon follows one now.
private final class WatchSource: Sendable {
    let followsDaemon = Atomic<Bool>(false)
}

/// Flags every command takes.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Print JSON, one object per line.")
    var json = false

    @Flag(help: "Compute the path in this process from netlink; never ask the daemon.")
    var direct = false

    @Option(
        help: ArgumentHelp(
            "Where the daemon is: system, session, or a D-Bus address or socket path (default: the system bus name, then the private socket).",
            valueName: "bus"))
    var bus: String?

    /// The daemon, unless --direct. A watcher that lost it looks for it again within a second.
    var client: ReachabilityClient? {
        direct
            ? nil
            : ReachabilityClient(
                endpoint: bus.map(ReachabilityClient.Endpoint.init) ?? .automatic,
                reconnectDelays: (.milliseconds(100), .seconds(1)))
    }

    @Option(help: ArgumentHelp("The reachd config whose [monitor] table to use.", valueName: "file"))
    var config: String?

    static let defaultConfig = "/etc/reachd/reachd.toml"

    /// The daemon's path when one answers, else the path computed here.
    func currentPath() throws -> Path {
        if let client, let path = try? client.blocking.currentPath() { return path }
        return try readHere { try ReachabilityMonitor.path(options: $0) }
    }

    /// Reads the kernel in this process with the `[monitor]` options; a failure is reachctl's one-line error.
    private func readHere<T>(_ read: (MonitorOptions) throws -> T) throws -> T {
        do {
            return try read(try monitorOptions())
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail("reading the network state", error)
        }
    }

    /// The current path, then every change: from the daemon when one answers
    /// (surviving its restarts), else from a monitor in this process — until a
    /// daemon answers: then from it, said on stderr. With `--bus`, only from the
    /// daemon there (waiting for it, said on stderr), never computed here.
    /// `stop` ends the stream on SIGINT/SIGTERM.
    func paths() throws -> (AsyncStream<Path>, stop: @Sendable () -> Void) {
        if let daemon = daemonToFollow() { return (daemon.paths, { Glibc.exit(0) }) }
        let monitor = try startMonitor()
        guard let client else { return (monitor.paths, { monitor.stop() }) }
        // No daemon now: compute the path here, and follow the daemon as soon as one answers.
        let (stream, continuation) = AsyncStream.makeStream(of: Path.self, bufferingPolicy: .bufferingNewest(1))
        let source = WatchSource()
        Task.detached {
            for await path in monitor.paths {
                guard !source.followsDaemon.load(ordering: .sequentiallyConsistent) else { break }
                continuation.yield(path)
            }
        }
        Task.detached {
            for await path in client.paths {
                var path = path
                if !source.followsDaemon.exchange(true, ordering: .sequentiallyConsistent) {
                    monitor.stop()
                    write(line: "reachctl: reachd answers now: following it", to: STDERR_FILENO)
                    path.initial = false
                }
                continuation.yield(path)
            }
        }
        return (stream, { Glibc.exit(0) })
    }

    /// The daemon to follow: the one that answers, or the one `--bus` names (waiting for it,
    /// said on stderr); nil without either. Asking and following share one connection.
    private func daemonToFollow() -> ReachabilityClient? {
        guard let client else { return nil }
        if (try? client.blocking.currentPath()) != nil { return client }
        guard let bus else { return nil }
        write(line: "reachctl: no reachd answers at \(bus) yet: waiting for it", to: STDERR_FILENO)
        return client
    }

    /// The daemon's path documents as it wrote them (the first marked initial), when a daemon
    /// answers or `--bus` names one: `watch --json` prints them as they come, fields a newer
    /// daemon added included. Nil when the path is computed here.
    func pathDocuments() -> AsyncStream<String>? { daemonToFollow()?.pathDocuments }

    /// The interfaces, then each change: from the daemon when one answers (or `--bus` names it),
    /// else from a monitor here, which `source` keeps running.
    func interfaceChanges() throws -> (InterfaceChangeStream, source: AnyObject) {
        if let daemon = daemonToFollow() { return (daemon.interfaceChanges, daemon) }
        let monitor = try startMonitor()
        return (monitor.interfaceChanges, monitor)
    }

    /// Every interface: the daemon's inventory when one answers, else the kernel's read here.
    func interfaces() throws -> [InterfaceChange] {
        if let client, let inventory = try? client.blocking.interfaces() { return inventory }
        return try readHere { try ReachabilityMonitor.interfaces(options: $0) }
    }

    /// A monitor here, started; with `inline`, each path is handed to it on the monitor's
    /// own thread instead of to streams.
    func startMonitor(inline: (@Sendable (Path) -> Void)? = nil) throws -> ReachabilityMonitor {
        let monitor = ReachabilityMonitor(options: try monitorOptions())
        do {
            if let inline { try monitor.start(deliveringInline: inline) } else { try monitor.start() }
        } catch {
            throw fail("watching the network state", error)
        }
        return monitor
    }

    /// The `[monitor]` options of the named config, or of the default one when it
    /// exists; the defaults without either.
    func monitorOptions() throws -> MonitorOptions {
        let file = config ?? Self.defaultConfig
        if config == nil && access(file, F_OK) != 0 { return MonitorOptions() }
        do {
            return try MonitorOptions.load(contentsOf: file)
        } catch {
            throw fail(reading: file, error)
        }
    }
}
