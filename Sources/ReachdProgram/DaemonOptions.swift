/// reachd's command line (docs/daemon.md, man reachd): four options, parsed by hand. The
/// daemon is measured by its resident memory, and swift-argument-parser cost it
/// more for these four than the whole netlink monitor.
struct DaemonOptions: Equatable {
    var config = "/etc/reachd/reachd.toml"
    var bus = "auto"
    var socket: String?
    var logLevel = Log.Level.info

    /// What to do instead of running.
    enum Stop: Error, Equatable {
        case help
        case version
        /// A usage error: the message, without the program's name.
        case usage(String)
    }

    static let help = """
        USAGE: reachd [--config <file>] [--bus <bus>] [--socket <path>] [--log-level <level>]
               reachd --version

        The network reachability daemon: the path and TLS trust on D-Bus and a
        private socket.

        OPTIONS:
          --config <file>       The config file; a missing file means defaults.
                                (default: /etc/reachd/reachd.toml)
          --bus <bus>           auto (the system bus when the name may be owned),
                                system, session, none, or a D-Bus address.
                                (default: auto)
          --socket <path>       The private socket (default: /run/reachd/bus as root
                                or under systemd, else $XDG_RUNTIME_DIR/reachd/bus,
                                else /tmp/reachd-$UID/bus).
          --log-level <level>   error, warning, notice, info or debug.
                                (default: info)
          --version             Show the version.
          -h, --help            Show help information.

        """

    /// Reads `--name value` and `--name=value`; the last of a repeated option wins.
    init(arguments: some Sequence<String>) throws(Stop) {
        var arguments = arguments.makeIterator()
        while let argument = arguments.next() {
            if argument == "-h" || argument == "--help" { throw .help }
            if argument == "--version" { throw .version }
            guard argument.hasPrefix("--") else { throw .usage("unexpected argument '\(argument)'") }
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard ["--config", "--bus", "--socket", "--log-level"].contains(name) else { throw .usage("unknown option '\(name)'") }
            // `--config=` and `--config --bus x` lack a value: an empty path would quietly mean defaults.
            let inline = parts.count == 2 ? String(parts[1]) : nil
            guard let value = inline ?? arguments.next(), !value.isEmpty, inline != nil || !value.hasPrefix("--") else {
                throw .usage("missing value for '\(name)'")
            }
            switch name {
            case "--config": config = value
            case "--bus": bus = value
            case "--socket": socket = value
            default:
                guard let level = Log.Level(name: value) else {
                    throw .usage("--log-level must be one of error, warning, notice, info, debug, not '\(value)'")
                }
                logLevel = level
            }
        }
    }
}
