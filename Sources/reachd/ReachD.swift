import ArgumentParser
import FoundationEssentials
import ReachabilityBus
import ReachabilityCore
#if canImport(Glibc)
import Glibc
#endif

@main
struct ReachD: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reachd",
        abstract: "The network reachability daemon: the path and TLS trust on D-Bus and a private socket."
    )

    @Option(help: ArgumentHelp("The config file; a missing file means defaults.", valueName: "file"))
    var config = "/etc/reachd/reachd.toml"

    @Option(help: ArgumentHelp("auto (the system bus when the name may be owned), system, session, none, or a D-Bus address.", valueName: "bus"))
    var bus = "auto"

    @Option(help: ArgumentHelp("The private socket (default: /run/reachd/bus as root or under systemd, else $XDG_RUNTIME_DIR/reachd/bus, else /tmp/reachd-$UID/bus).", valueName: "path"))
    var socket: String?

    @Option(name: .customLong("log-level"), help: ArgumentHelp("error, warning, notice, info or debug.", valueName: "level"))
    var logLevel = "info"

    func run() throws {
        guard let level = Log.Level(name: logLevel) else {
            throw ValidationError("--log-level must be one of error, warning, notice, info, debug")
        }
        Log.threshold = level
        // Before any thread exists, so that every thread inherits the mask and the
        // signals reach the loop's signalfd only.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGHUP)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        _ = Glibc.signal(SIGPIPE, SIG_IGN)

        let helper = TrustHelper.locate()
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonConfiguration.load(config, helper: helper)
        } catch {
            Log.error("\(error)")
            throw ExitCode(1)
        }
        let code: Int32
        do {
            code = try serve(configuration, helper: helper)
        } catch {
            Log.error("\(error)")
            throw ExitCode(1)
        }
        Log.info("exiting")
        if code != 0 { throw ExitCode(code) }
    }

    /// Runs the loop until SIGTERM or SIGINT; its exit code.
    func serve(_ configuration: DaemonConfiguration, helper: TrustHelper?) throws -> Int32 {
        let loop = try EventLoop()
        let daemon = try Daemon(configFile: config, configuration: configuration, helper: helper, loop: loop)
        let privateSocket = try PrivateSocket(path: socket ?? PrivateSocket.defaultPath)
        try privateSocket.serve(daemon.object, on: loop) { Log.warning($0) }
        Log.info("serving \(privateSocket.path)")
        let onBus = try connectBus(daemon.object, loop: loop)
        try loop.onSignal(SIGHUP) { try? daemon.reloadConfiguration() }
        try loop.onSignal(SIGTERM) { loop.exit(0) }
        try loop.onSignal(SIGINT) { loop.exit(0) }
        loop.enableWatchdog()
        daemon.publishCurrentPath()
        let code = try loop.run()
        // The socket file goes, and the bus name is released, only now.
        withExtendedLifetime((privateSocket, onBus)) {}
        return code
    }

    /// The well-known name on the chosen bus. `auto` goes without a bus when
    /// there is none or the name may not be owned; a named bus must work.
    func connectBus(_ object: ReachabilityObject, loop: EventLoop) throws -> BusConnection? {
        if bus == "none" { return nil }
        do {
            let connection = try BusConnection.connect(bus == "auto" ? .system : BusConnection.Endpoint(bus))
            try connection.attach(to: loop)
            try object.serve(on: connection)
            try connection.requestName("io.reachd.Reachability1")
            Log.info("owning io.reachd.Reachability1 on \(bus == "auto" ? "the system bus" : bus)")
            return connection
        } catch {
            guard bus == "auto" else { throw error }
            Log.notice("no system bus name (\(error)): serving the private socket only")
            return nil
        }
    }
}
