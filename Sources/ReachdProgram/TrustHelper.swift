import FoundationEssentials
import ProgramSupport
import ReachabilityCore
import SDBus
import SystemCalls
import TrustHelperMessages

#if canImport(Glibc)
import Glibc
#endif

/// reachd-trust, the process that does the TLS work: it validates the `[trust]`
/// table and runs each round of checks. Keeping swift-nio-ssl, swift-certificates
/// and swift-crypto (which brings full Foundation) out of the daemon keeps the
/// daemon's resident memory at a third.
struct TrustHelper {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// Killed at its deadline.
        var timedOut = false
    }

    let executable: String
    /// Where its warnings go: where the daemon's go.
    let log: Log

    /// Beside the daemon's own binary, or in ../libexec.
    static func locate(log: Log) -> TrustHelper? {
        Libexec.path(of: "reachd-trust").map { TrustHelper(executable: $0, log: log) }
    }

    /// How long a config check may take: it reads files, it dials nothing.
    static let configCheckBudget: Duration = .seconds(30)

    /// Validates the `[trust]` table of `file`, at start (before the loop runs).
    func checkConfig(_ file: String) throws(Failure) -> TrustConfigurationSummary {
        try configSummary(try HelperProcess(executable, ["check-config", file], deadline: .now + Self.configCheckBudget).runToEnd())
    }

    /// Validates it on the loop (a reload): `completion` runs there with the outcome.
    func startConfigCheck(
        _ file: String, runs: HelperRuns,
        completion: @escaping (Result<TrustConfigurationSummary, Failure>) -> Void
    ) throws(Failure) {
        try runs.start(executable, ["check-config", file], within: Self.configCheckBudget) { [self] outcome in
            completion(Result { () throws(Failure) in try configSummary(outcome) })
        }
    }

    private func configSummary(_ outcome: HelperProcess.Outcome) throws(Failure) -> TrustConfigurationSummary {
        let message = String(decoding: outcome.errors, as: UTF8.self)
        if outcome.timedOut { throw Failure(description: "reachd-trust check-config did not finish within \(Self.configCheckBudget)") }
        guard outcome.status == 0 else {
            // "reachd-trust: FILE:LINE: reason" → "FILE:LINE: reason"
            let reason = message.split(separator: "\n").last.map { $0.hasPrefix("reachd-trust: ") ? $0.dropFirst(14) : $0 }
            throw Failure(description: reason.map(String.init) ?? "reachd-trust exited \(outcome.status)")
        }
        // Warnings (a host with trust evaluation disabled) go where the daemon's go.
        for line in message.split(separator: "\n") { log.warning(String(line)) }
        guard let summary = try? JSONDecoder().decode(TrustConfigurationSummary.self, from: Data(outcome.output)) else {
            throw Failure(description: "reachd-trust answered nothing usable")
        }
        return summary
    }

    /// Starts a round over `path`, killed past `budget`; `completion` runs on the loop with its outcome.
    /// Behind a portal, the round is given the evidence for its reports: the probe's answer,
    /// and what the network's API said — announced it, said it is not captive (the redirect is
    /// then suspect), or nothing.
    func startCheck(
        _ file: String, path: Path?, probe: ConnectivityProbe.Verdict?, within budget: Duration, runs: HelperRuns,
        completion: @escaping (Result<TrustRound, Failure>) -> Void
    ) throws(Failure) {
        var arguments = path.map { [$0.status.rawValue, $0.interface?.name ?? "", $0.connectivity.rawValue] } ?? []
        if let path, path.connectivity == .portal {
            let evidence: CaptivePortalEvidence.Kind =
                switch path.capport?.captive {
                case true?: .announced
                case false?: .contradicted
                case nil: .redirect
                }
            arguments += [
                probe?.httpStatus.map(String.init) ?? "", probe?.portal ?? "", evidence.rawValue, path.capport?.api ?? "",
                path.capport?.userPortalURL ?? ""
            ]
        }
        try start(["check", file] + arguments, within: budget, runs: runs, completion: completion)
    }

    /// Starts a delivery pass over the report outbox, killed past `budget`; `completion` runs on the loop.
    func startDelivery(
        _ file: String, route: (connectivity: Connectivity, trust: TrustSummary), within budget: Duration, runs: HelperRuns,
        completion: @escaping (Result<TrustDelivery, Failure>) -> Void
    ) throws(Failure) {
        try start(["deliver", file, route.connectivity.rawValue, route.trust.rawValue], within: budget, runs: runs, completion: completion)
    }

    /// Queries a captive-portal API (RFC 8908) through interface `index` within `timeout`,
    /// trusting `anchors` beside the system's roots; `completion` runs on the loop.
    func startCaptivePortalQuery(
        _ uri: String, interfaceIndex index: Int32, timeout: Duration, anchors: [String], runs: HelperRuns,
        completion: @escaping (CaptivePortalAPIAnswer) -> Void
    ) throws(Failure) {
        let milliseconds = String(Int64(timeout / .milliseconds(1)))
        try start(
            ["capport", uri, String(index), milliseconds] + anchors, within: timeout + TrustConfigurationSummary.budgetMargin,
            runs: runs
        ) { (result: Result<CaptivePortalAPIAnswer, Failure>) in
            switch result {
            case let .success(answer): completion(answer)
            case let .failure(failure): completion(CaptivePortalAPIAnswer(failure: "\(failure)", invalid: false))
            }
        }
    }

    /// Runs the helper without blocking the loop; its one JSON line is decoded when it exits.
    /// Its own log lines (stderr) go, as it wrote them, where the daemon's go.
    private func start<Answer: Decodable>(
        _ arguments: [String], within budget: Duration, runs: HelperRuns,
        completion: @escaping (Result<Answer, Failure>) -> Void
    ) throws(Failure) {
        try runs.start(executable, arguments, within: budget) { outcome in
            _ = try? FileDescriptor.standardError.writeAll(outcome.errors)
            if outcome.timedOut {
                completion(
                    .failure(Failure(description: "reachd-trust \(arguments[0]) did not finish within \(budget) (killed)", timedOut: true)))
            } else if outcome.status == 0, !outcome.overflowed,
                let answer = try? JSONDecoder().decode(Answer.self, from: Data(outcome.output))
            {
                completion(.success(answer))
            } else {
                completion(.failure(Failure(description: "reachd-trust \(arguments[0]) exited \(outcome.status) without a result")))
            }
        }
    }
}
