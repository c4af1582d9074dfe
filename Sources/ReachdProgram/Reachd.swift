import CLinuxShim
import FoundationEssentials
import ProgramSupport
import ReachabilityBus
import ReachabilityContract
import ReachabilityCore
import SDBus
import SystemCalls
import TOML

#if canImport(Glibc)
import Glibc
#endif

/// reachd's entry point (the program is `reachd`, or the installed multi-call binary under that name).
package struct Reachd {
    let options: DaemonOptions

    package static func main() -> Never {
        let options: DaemonOptions
        do throws(DaemonOptions.Stop) {
            options = try DaemonOptions(arguments: CommandLine.arguments.dropFirst())
        } catch {
            switch error {
            case .help:
                print(DaemonOptions.help, terminator: "")
                exit(0)
            case .version:
                print(reachdVersion)
                exit(0)
            case let .usage(message):
                Log.standardError().error("\(message) (see reachd --help)")
                exit(64) // EX_USAGE
            }
        }
        exit(Reachd(options: options).run())
    }

    /// Exit code when the bus's broker went away (EX_UNAVAILABLE): a failure, so that systemd restarts reachd.
    static let lostBusExitCode: Int32 = 69

    /// The exit code.
    func run() -> Int32 {
        let log = Log.standardError(threshold: options.logLevel)
        // Before any thread exists, so that every thread inherits the mask and the
        // signals reach the loop's signalfd only.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGHUP)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        _ = Glibc.signal(SIGPIPE, SIG_IGN)

        let helper = TrustHelper.locate(log: log)
        do {
            let code = try serve(try DaemonConfiguration.load(options.config, helper: helper), helper: helper, log: log)
            log.info("exiting")
            return code
        } catch {
            log.error("\(error)")
            return 1
        }
    }

    /// Runs the loop until SIGTERM or SIGINT; its exit code.
    func serve(_ configuration: DaemonConfiguration, helper: TrustHelper?, log: Log) throws -> Int32 {
        let loop = try EventLoop()
        let daemon = try Daemon(configFile: options.config, configuration: configuration, helper: helper, loop: loop, log: log)
        let privateSocket = try PrivateSocket(path: options.socket ?? PrivateSocketPlace.defaultPath)
        try privateSocket.serve(daemon.object, on: loop) { log.warning($0) }
        log.info("serving \(privateSocket.path)")
        let onBus = try connectBus(daemon.object, loop: loop, log: log)
        try daemon.attach(bus: onBus)
        try loop.onSignal(SIGHUP) { daemon.reloadConfiguration() }
        try loop.onSignal(SIGTERM) { loop.exit(0) }
        try loop.onSignal(SIGINT) { loop.exit(0) }
        loop.enableWatchdog()
        daemon.publishCurrentPath()
        let settled = try loop.timer {
            do {
                log.debug("start-up settled: \(try Self.releaseStartupPages()) KiB of the program's own pages left the resident set")
            } catch {
                log.debug("start-up settled; its pages stay resident: \(error)")
            }
        }
        settled.arm(after: Self.startupSettles)
        let code = try loop.run()
        // The socket file goes, and the bus name is released, only now.
        withExtendedLifetime((privateSocket, onBus, settled)) {}
        return code
    }

    /// How long after the first path start-up's one-off work is over: the first trust
    /// round and probes under way, the first clients served.
    static let startupSettles = Duration.seconds(10)

    /// Start-up touches pages of the binary that idle never touches again — the option and
    /// configuration parsers, the first dumps, the Swift runtime's first conformance lookups,
    /// which read every conformance record — and the kernel maps each one's cached neighbours
    /// with it. Once start-up settled they leave the resident set; what runs afterwards maps
    /// its own back from the page cache at its first touch (docs/development.md, "Idle memory").
    /// Returns how much left, KiB.
    static func releaseStartupPages() throws -> Int {
        let smaps = try SmallFile.read("/proc/self/smaps", limit: 16 << 20)
        let released = try ProgramPages.releaseUnmodified(smaps: String(decoding: smaps, as: UTF8.self))
        // Reading smaps (some 150 KB) grew the heap; what it left free goes back too.
        malloc_trim(0)
        return released
    }

    /// The well-known name on the chosen bus. `auto` goes without a bus when
    /// there is none or the name may not be owned; a named bus must work.
    func connectBus(_ object: ReachabilityObject, loop: EventLoop, log: Log) throws -> BusConnection? {
        let bus = options.bus
        if bus == "none" { return nil }
        do {
            let connection = try BusConnection.connect(bus == "auto" ? .system : BusConnection.Endpoint(bus))
            try connection.attach(to: loop)
            try object.serve(on: connection)
            try connection.requestName(ReachabilityContract.name)
            let shown = bus == "auto" ? "the system bus" : bus
            log.info("owning io.reachd.Reachability1 on \(shown)")
            // The broker restarted or crashed: every name, match and NameOwnerChanged
            // follow went with it. Exiting non-zero lets the service manager
            // (Restart=on-failure) start reachd afresh, which owns and follows everything
            // again; reconnecting in place would have to rebuild each of them.
            try connection.onSignal(
                sender: "org.freedesktop.DBus.Local", path: "/org/freedesktop/DBus/Local",
                interface: "org.freedesktop.DBus.Local", member: "Disconnected"
            ) { _ in
                log.error("lost \(shown) (its broker went away): exiting so that the service manager starts reachd again")
                loop.exit(Self.lostBusExitCode)
            }
            return connection
        } catch {
            guard bus == "auto" else { throw error }
            log.notice("no system bus name (\(error)): serving the private socket only")
            return nil
        }
    }
}
