import FoundationEssentials
import ProgramSupport
import ReachabilityCore
import ServerTrust
import TrustCommands
import TrustHelperMessages
import X509

#if canImport(Glibc)
import Glibc
#endif

// reachd-trust: reachd's TLS side, in a process of its own. TLS, X.509 and
// swift-crypto bring full Foundation (≈ 10 MB of RSS); the daemon stays small
// by running this only while a check runs.
//
//   reachd-trust check-config FILE
//       validates the [trust] table; prints TrustConfigurationSummary; exit 1 with file:line on stderr
//   reachd-trust check FILE [STATUS [INTERFACE [CONNECTIVITY [HTTP-STATUS [LOCATION [EVIDENCE [API [USER-PORTAL-URL]]]]]]]]
//       re-validates every host; spools reports; delivers waiting ones when CONNECTIVITY
//       is full (or not given) and the round neither compromised nor portal; prints TrustRound.
//       CONNECTIVITY portal: failed handshakes are judged `portal` (unless EVIDENCE is
//       `contradicted`: the network's API said it is not captive), and a pinned host's
//       failure is reported marked with the evidence: the probe's HTTP-STATUS and
//       LOCATION, EVIDENCE (announced, redirect, contradicted), the API and its page
//   reachd-trust deliver FILE [CONNECTIVITY TRUST]
//       sends the reports waiting in the outbox to their collectors: https ones over any
//       path, plain-HTTP ones only when CONNECTIVITY is full (or not given) and TRUST, the
//       last verdict, neither compromised nor portal (ReportRoute); prints TrustDelivery
//   reachd-trust capport URI INTERFACE-INDEX TIMEOUT-MS [ANCHOR-FILE …]
//       queries a captive-portal API (RFC 8908) through that interface, trusting the
//       system's roots and the anchors; prints CaptivePortalAPIAnswer
//   reachd-trust ctl check|verify|pin|diagnose …
//       `reachctl trust …`'s TLS commands (reachctl execs this for them)
//   reachd-trust --version

/// One JSON object as text, keys sorted (stable for the reader and for tests).
private func json(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

private func printLine(_ text: String, to descriptor: Int32 = STDOUT_FILENO) {
    var line = text + "\n"
    line.withUTF8 { _ = write(descriptor, $0.baseAddress, $0.count) }
}

private func fail(_ message: String) -> Never {
    printLine("reachd-trust: \(message)", to: STDERR_FILENO)
    exit(1)
}

/// reachd-trust's entry point (the program is `reachd-trust`, or the installed
/// multi-call binary run under that name).
package enum ReachdTrust {
    package static func main() async -> Never {
        do {
            try await run()
        } catch {
            fail("\(error)")
        }
        exit(0)
    }

    private static func run() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments == ["--version"] {
            printLine(reachdVersion)
            exit(0)
        }
        if arguments.first == "ctl" {
            await ReachctlTrustCommand.run(Array(arguments.dropFirst()))
            exit(0)
        }
        if arguments.first == "capport" {
            printLine(try json(await queryCaptivePortalAPI(Array(arguments.dropFirst()))))
            exit(0)
        }
        guard arguments.count >= 2, ["check-config", "check", "deliver"].contains(arguments[0]) else {
            fail(
                "usage: reachd-trust check-config FILE | check FILE [STATUS [INTERFACE [CONNECTIVITY [HTTP-STATUS [LOCATION [EVIDENCE [API [USER-PORTAL-URL]]]]]]]] | deliver FILE [CONNECTIVITY TRUST] | capport URI INTERFACE-INDEX TIMEOUT-MS [ANCHOR …] | ctl COMMAND …"
            )
        }
        let file = arguments[1]
        let configuration: TrustConfiguration
        do {
            configuration = access(file, F_OK) == 0 ? try TrustConfiguration.load(contentsOf: file) : TrustConfiguration()
        } catch {
            fail("\(error)")
        }

        let spool = ReportSpool(directory: configuration.reports)

        if arguments[0] == "check-config" {
            // One line, however many: at every start and reload, 400 lines would bury the rest of the journal.
            let disabled = configuration.hosts.entries.filter { $0.value.policy.mode == .disabled }.map(\.pattern.description)
            if !disabled.isEmpty {
                let named = disabled.prefix(3).joined(separator: ", ") + (disabled.count > 3 ? " and \(disabled.count - 3) more" : "")
                printLine(
                    "reachd-trust: trust evaluation is DISABLED for \(disabled.count == 1 ? "" : "\(disabled.count) entries: ")\(named): any certificate is accepted",
                    to: STDERR_FILENO)
            }
            for collector in configuration.plainHTTPReportURIs {
                printLine(
                    "reachd-trust: report-uri \(collector) is plain HTTP (allow-http-report-uri = true): anyone on the path reads its reports and can answer for it",
                    to: STDERR_FILENO)
            }
            let reportsPending: Int
            do {
                reportsPending = try spool.outbox.countPending()
            } catch {
                printLine("reachd-trust: \(error): its waiting reports are not counted", to: STDERR_FILENO)
                reportsPending = 0
            }
            printLine(
                try json(
                    TrustConfigurationSummary(
                        recheck: configuration.recheck.rawValue, interval: configuration.interval.components.seconds,
                        probed: configuration.probedHosts.map { .init(host: $0.pattern.domain, port: $0.port) },
                        reportsPending: reportsPending,
                        timeoutMilliseconds: Int64(configuration.timeout / .milliseconds(1)),
                        collectors: Set(configuration.hosts.entries.flatMap(\.value.reportURIs)).count)))
            exit(0)
        }

        var warnings: [String] = []
        let anchors: [Certificate]
        do {
            anchors = try ChainValidator.systemAnchors()
        } catch {
            warnings.append("no system roots (\(error)): only configured anchors are trusted")
            anchors = []
        }
        let checker = TrustChecker(configuration: configuration, systemAnchors: anchors, spool: spool)

        if arguments[0] == "deliver" {
            // Collectors are judged as hosts are: the system's roots, the config's pins.
            let route = ReportRoute(
                connectivity: arguments.count > 2 ? arguments[2] : nil,
                trust: arguments.count > 3 ? TrustSummary(rawValue: arguments[3]) ?? .unknown : .ok)
            let delivery = await spool.outbox.deliver(timeout: configuration.timeout, judgedBy: checker, route: route)
            printLine(
                try json(
                    TrustDelivery(
                        delivered: delivery.delivered, dropped: delivery.dropped,
                        reportsPending: delivery.pending, warnings: warnings + delivery.errors,
                        reportFailures: delivery.failures)))
            exit(0)
        }

        var path: [String: String] = [:]
        for (key, index) in [("status", 2), ("interface", 3), ("connectivity", 4)] where arguments.count > index {
            path[key] = arguments[index]
        }
        func argument(_ index: Int) -> String? { arguments.count > index && !arguments[index].isEmpty ? arguments[index] : nil }
        let behindPortal =
            path["connectivity"] == "portal"
            ? CaptivePortalEvidence(
                kind: argument(7).flatMap(CaptivePortalEvidence.Kind.init(rawValue:)) ?? .redirect,
                httpStatus: argument(5).flatMap { Int($0) }, location: argument(6), api: argument(8), userPortalURL: argument(9))
            : nil
        let round = await checker.checkAll(path: path, behindPortal: behindPortal)
        let pinsEnforced = zip(configuration.probedHosts, round.hosts).filter { host, result in host.isPinned && result.enforced }.map(\.1)
        printLine(
            try json(
                TrustRound(
                    overall: round.overall, hosts: round.hosts.map(\.status),
                    reports: try round.reports.map { String(decoding: try $0.json(), as: UTF8.self) },
                    warnings: warnings + round.reportErrors + round.hosts.compactMap { host in host.warning.map { "\(host.host): \($0)" } },
                    reportsPending: round.reportsPending,
                    pinFailures: pinsEnforced.filter(\.verdict.isInterception).map(\.host),
                    pinFailuresBehindPortal: pinsEnforced.filter { $0.verdict == .portal }.map(\.host),
                    evicted: round.evicted, reportFailures: round.reportFailures)))
    }

    /// `capport URI INTERFACE-INDEX TIMEOUT-MS [ANCHOR …]`: the API's document, parsed, or why there is none.
    private static func queryCaptivePortalAPI(_ arguments: [String]) async -> CaptivePortalAPIAnswer {
        guard arguments.count >= 3, let index = Int32(arguments[1]), let milliseconds = Int64(arguments[2]), milliseconds > 0 else {
            fail("usage: reachd-trust capport URI INTERFACE-INDEX TIMEOUT-MS [ANCHOR …]")
        }
        var anchors = (try? ChainValidator.systemAnchors()) ?? []
        for file in arguments.dropFirst(3) {
            do {
                anchors += try CertificateLoader.certificates(inFile: file)
            } catch {
                return CaptivePortalAPIAnswer(failure: "capport-anchors \(file): \(error)", invalid: false)
            }
        }
        let request = CaptivePortalAPIRequest(
            uri: arguments[0], interfaceIndex: index > 0 ? index : nil, anchors: anchors,
            timeout: .milliseconds(milliseconds))
        do {
            return CaptivePortalAPIAnswer(document: try CaptivePortalAPIDocument.parse(try await request.fetch()))
        } catch let failure as CaptivePortalAPIRequest.Failure {
            return CaptivePortalAPIAnswer(failure: failure.description, invalid: failure.answered)
        } catch {
            return CaptivePortalAPIAnswer(failure: "\(arguments[0]) answered a document that is not RFC 8908's: \(error)", invalid: true)
        }
    }
}
