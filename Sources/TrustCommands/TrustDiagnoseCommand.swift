import ArgumentParser
import NIOCore
import NIOSSL
import ReachctlSupport
import ServerTrust

struct TrustDiagnoseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose",
        abstract: TrustCommandHelp.abstract(of: "diagnose"),
        discussion:
            "Like nscurl --ats-diagnostics: one line per configuration — whether the server accepts it, and whether it is within the baseline (TLS 1.2 or later with forward secrecy). Then the chain under the default evaluation. Exits 0 whatever it finds."
    )

    @Argument(help: ArgumentHelp("The server.", valueName: "https://host[:port]"))
    var server: ServerAddress

    @Option(help: ArgumentHelp("Dial this address instead of resolving the name.", valueName: "address"))
    var connect: String?

    @Option(help: ArgumentHelp("Connect and handshake timeout, each.", valueName: "seconds"))
    var timeout: Double = 5

    @Option(
        name: .customLong("ca"),
        help: ArgumentHelp("Trust anchors for the chain instead of the system's roots; repeatable.", valueName: "file"))
    var anchors: [String] = []

    @Flag(help: "Print JSON.")
    var json = false

    struct Configuration: Encodable {
        var version: String
        var forwardSecret: Bool
        var accepted: Bool
        var withinBaseline: Bool
        var detail: String?

        enum CodingKeys: String, CodingKey {
            case version, forwardSecret = "forward-secret", accepted, withinBaseline = "within-baseline", detail
        }
    }

    struct Report: Encodable {
        var host: String
        var port: Int
        var configurations: [Configuration]
        var chain: HostTrustResult?
        /// An ATS client connects: a configuration within the baseline is accepted and the chain passes.
        var ats: String
    }

    func run() async throws {
        let port = server.port ?? 443
        let limit = TimeAmount.milliseconds(Int64(timeout * 1000))
        var configurations: [Configuration] = []
        let tries: [(TLSVersion, Bool)] = [
            (.tlsv1, true), (.tlsv1, false), (.tlsv11, true), (.tlsv11, false),
            (.tlsv12, true), (.tlsv12, false), (.tlsv13, true)
        ]
        for (version, forwardSecret) in tries {
            let suites =
                version == .tlsv13
                ? nil
                : forwardSecret ? TLSPolicyEvaluator.forwardSecretCipherSuites : TLSPolicyEvaluator.staticKeyCipherSuites
            let probe = TLSProbe(
                connectTimeout: limit, handshakeTimeout: limit, minimumTLSVersion: version,
                maximumTLSVersion: version, cipherSuites: suites)
            let result = await probe.probe(host: server.host, port: port, connectingTo: connect)
            var line = Configuration(
                version: version.name, forwardSecret: forwardSecret, accepted: false,
                withinBaseline: version != .tlsv1 && version != .tlsv11 && forwardSecret)
            switch result {
            case .success: line.accepted = true
            case let .failure(failure): line.detail = failure.description
            }
            if case let .failure(failure) = result, failure.isUnreachable, configurations.isEmpty {
                throw fail("\(server.host):\(port)", failure.description, exitCode: 2)
            }
            configurations.append(line)
        }
        var checkerConfiguration = TrustConfiguration()
        checkerConfiguration.timeout = .milliseconds(Int64(timeout * 1000))
        let roots = try TrustPolicyOptions.anchors(from: anchors)
        let checker = TrustChecker(
            configuration: checkerConfiguration, systemAnchors: roots.isEmpty ? try TrustPolicyOptions.systemAnchors() : roots)
        let chain = await checker.check(server.host, port: port, connectingTo: connect)
        let connects = configurations.contains { $0.accepted && $0.withinBaseline } && chain.verdict == .trusted
        let report = Report(host: server.host, port: port, configurations: configurations, chain: chain, ats: connects ? "pass" : "fail")
        if json { try writeJSON(report); return }
        for line in configurations {
            let name =
                line.version == "TLS 1.3"
                ? "TLS 1.3 (forward-secret)" : "\(line.version) \(line.forwardSecret ? "forward-secret" : "static RSA key exchange")"
            let verdict = line.withinBaseline ? (line.accepted ? "PASS" : "FAIL") : "below the baseline"
            let column = name + String(repeating: " ", count: max(0, 34 - name.count))
            write(line: "\(column)\(line.accepted ? "accepted" : "refused ")  ATS: \(verdict)")
        }
        write(line: "chain: \(chain.verdict.rawValue) — \(chain.reason)")
        write(line: "ATS: \(connects ? "PASS — an ATS client connects" : "FAIL — an ATS client would not connect")")
    }
}
