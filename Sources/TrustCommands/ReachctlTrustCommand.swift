import ArgumentParser
import FoundationEssentials
import ReachctlSupport
import ServerTrust
import X509

#if canImport(Glibc)
import Glibc
#endif

/// `reachctl trust check|verify|pin|diagnose`: the TLS commands, run in
/// reachd-trust (`reachd-trust ctl …`, which reachctl becomes) so that reachctl
/// itself links no TLS code and with it no full Foundation (7–8 MB of RSS and
/// 50–70 ms at every start of `reachctl status`).
public struct ReachctlTrustCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "reachctl trust",
        abstract: TrustCommandHelp.abstract,
        discussion: TrustCommandHelp.discussion,
        subcommands: [TrustCheckCommand.self, TrustVerifyCommand.self, TrustPinCommand.self, TrustDiagnoseCommand.self]
    )

    public init() {}

    /// Parses `arguments` (after `reachctl trust`) and runs the command; exits on errors.
    public static func run(_ arguments: [String]) async {
        // Inside an async function, so that this is AsyncParsableCommand's `main`,
        // which awaits the command: at top level the synchronous one is chosen.
        await main(arguments)
    }
}

/// The policy flags of `check` and `verify`.
struct TrustPolicyOptions: ParsableArguments {
    @Option(
        name: .customLong("pin"),
        help: ArgumentHelp("A pin the chain must contain (sha256/…, sha256//…, pin-sha256=\"…\" or base64); repeatable.", valueName: "pin"))
    var pins: [String] = []

    @Option(
        name: .customLong("ca"),
        help: ArgumentHelp("Trust anchors (PEM, DER or bundle) instead of the system's roots; repeatable.", valueName: "file"))
    var anchors: [String] = []

    @Option(help: ArgumentHelp("The reachd config whose [trust] table to use.", valueName: "file"))
    var config: String?

    @Flag(help: "Print JSON.")
    var json = false

    /// A checker with the policy the flags describe for `host`, or the config's;
    /// `timeout` (seconds) replaces the config's.
    func checker(for host: String?, timeout: Double? = nil) throws -> TrustChecker {
        if pins.isEmpty && anchors.isEmpty {
            let file = config ?? "/etc/reachd/reachd.toml"
            var configuration = TrustConfiguration()
            if config != nil || access(file, F_OK) == 0 {
                do { configuration = try TrustConfiguration.load(contentsOf: file) } catch { throw fail(reading: file, error) }
            }
            if let timeout { configuration.timeout = .milliseconds(Int64(timeout * 1000)) }
            return TrustChecker(configuration: configuration, systemAnchors: try Self.systemAnchors())
        }
        let pins: Set<PublicKeyPin>
        do { pins = Set(try self.pins.map { try PublicKeyPin(parsing: $0) }) } catch { throw fail("--pin", error) }
        let roots = try Self.anchors(from: anchors)
        var configuration = TrustConfiguration()
        if let timeout { configuration.timeout = .milliseconds(Int64(timeout * 1000)) }
        if let host {
            // One-off checks have no backup-pin rule: that rule protects deployed clients.
            let policy =
                try pins.isEmpty
                ? TrustPolicy(requiresTLSBaseline: true) : TrustPolicy(mode: .publicKey, pins: pins, requiresTLSBaseline: true)
            let pattern: HostPattern
            do { pattern = try HostPattern(host) } catch { throw fail(host, error) }
            try configuration.hosts.add(pattern, HostTrustConfiguration(pattern: pattern, policy: policy))
        } else if !pins.isEmpty {
            throw fail("--pin", "pins need --host: they are matched against the chain validated for a name")
        }
        return TrustChecker(configuration: configuration, systemAnchors: roots.isEmpty ? try Self.systemAnchors() : roots)
    }

    /// The certificates of the `--ca` files.
    static func anchors(from files: [String]) throws -> [Certificate] {
        var roots: [Certificate] = []
        for file in files {
            do { roots += try CertificateLoader.certificates(inFile: file) } catch { throw fail("--ca", error) }
        }
        return roots
    }

    static func systemAnchors() throws -> [Certificate] {
        do { return try ChainValidator.systemAnchors() } catch { throw fail("reading the system's roots", error) }
    }
}

/// `HOST[:PORT]`, `[v6]:PORT` or `https://HOST[:PORT][/…]`.
struct ServerAddress: ExpressibleByArgument {
    var host: String
    var port: Int?

    init?(argument: String) {
        var text = Substring(argument)
        if text.lowercased().hasPrefix("https://") { text = text.dropFirst(8) }
        text = text.prefix { $0 != "/" }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            port = rest.isEmpty ? nil : Int(rest.dropFirst())
            if !rest.isEmpty && port == nil { return nil }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            guard let number = Int(text[text.index(after: colon)...]) else { return nil }
            port = number
        } else {
            host = String(text)
        }
        guard !host.isEmpty, port.map({ (1...65535).contains($0) }) ?? true else { return nil }
    }
}

/// A JSON line (sorted keys: stable for scripts).
func writeJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    write(line: String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// The human form of one host's result.
func describe(_ result: HostTrustResult) -> String {
    var lines = [
        "\(result.host.isEmpty ? "chain" : result.host)\(result.tlsVersion == nil ? "" : ":\(result.port)"): \(result.verdict.rawValue)\(result.enforced ? "" : " (report-only)")",
        "  \(result.reason)"
    ]
    if let version = result.tlsVersion { lines.append("  negotiated \(version.name)") }
    if result.pattern != result.host { lines.append("  policy of \(result.pattern)") }
    if let warning = result.warning { lines.append("  warning: \(warning)") }
    for (index, pin) in result.presentedPins.enumerated() {
        lines.append("  \(index == 0 ? "chain:" : "      ") \(pin)")
    }
    return lines.joined(separator: "\n")
}
