import FoundationEssentials
import NIOCore
import NIOSSL
import X509

/// Re-validates every configured host, concurrently: what reachd runs on each
/// path change. Network failures give `unreachable`, never a trust verdict; a
/// pinned host's failure is written to the report spool before the result is
/// returned, so whoever signals it knows the report is on disk.
public struct TrustChecker: Sendable {
    /// The hosts and their policies.
    public let configuration: TrustConfiguration
    /// The system's trust anchors, for policies that validate chains.
    public let systemAnchors: [Certificate]
    /// Where pin-failure reports go; nil: not written (reachctl's one-off checks).
    public let spool: ReportSpool?

    /// Per pattern: the evaluator of the policy, and the one used once the pins expired.
    private let evaluators: [HostPattern: (policy: CompositeTrustEvaluator, pinsExpired: CompositeTrustEvaluator)]

    /// A checker.
    ///
    /// - Parameters:
    ///   - configuration: The hosts and their policies.
    ///   - systemAnchors: The system's trust anchors.
    ///   - spool: Where pin-failure reports go; nil: nowhere.
    public init(configuration: TrustConfiguration, systemAnchors: [Certificate], spool: ReportSpool? = nil) {
        self.configuration = configuration
        self.systemAnchors = systemAnchors
        self.spool = spool
        var evaluators: [HostPattern: (CompositeTrustEvaluator, CompositeTrustEvaluator)] = [:]
        for (pattern, host) in configuration.hosts.entries {
            evaluators[pattern] = Self.evaluators(for: host.policy, systemAnchors: systemAnchors)
        }
        self.evaluators = evaluators
    }

    private static func evaluators(
        for policy: TrustPolicy, systemAnchors: [Certificate]
    ) -> (CompositeTrustEvaluator, CompositeTrustEvaluator) {
        var unpinned = policy
        unpinned.mode = .default
        return (policy.evaluator(systemAnchors: systemAnchors), unpinned.evaluator(systemAnchors: systemAnchors))
    }

    /// The result of one round.
    public struct Round: Sendable {
        /// The round's overall verdict.
        public var overall: TrustSummary
        /// In the order of the configuration.
        public var hosts: [HostTrustResult]
        /// Reports written to the spool in this round (identical ones within 24 h are not).
        public var reports: [PinFailureReport]
        /// Reports that could not be spooled or delivered to a report-uri, and why.
        public var reportErrors: [String]
        /// Reports in the outbox after this round's delivery: their collectors did not answer 2xx.
        public var reportsPending = 0
        /// Reports evicted to keep the spool and the outbox within their capacity.
        public var evicted: [String] = []
        /// Reports lost or unaccounted for: not built, not written, the outbox not readable
        /// (each also in ``reportErrors``, beside the collectors that did not answer).
        public var reportFailures = 0
    }

    /// Checks every exact host of the table. `path` goes into pin-failure reports
    /// (status, interface, connectivity); `time` replaces now for the evaluation.
    ///
    /// `behindPortal`: the network is a captive portal — its API announced it, or the
    /// connectivity probe was redirected — and this is the evidence. A handshake that
    /// fails validation is then judged `portal` — neither `ok` nor `compromised` — yet
    /// a pinned host's failure is still spooled, marked with that evidence: nobody can
    /// tell a real portal from an interceptor posing as one over plain HTTP
    /// (docs/security.md). Evidence the network's API contradicts is not credible:
    /// failures are judged as they are, and their reports carry it.
    ///
    /// `deliverReports`: waiting reports (this round's and earlier ones) are sent at
    /// the end of the round when the path reaches the Internet unaltered — `path`'s
    /// connectivity `full` (or not given) and the round neither `compromised` nor
    /// `portal` (`ReportRoute`, in TrustVocabulary). Otherwise they wait for a delivery pass
    /// (``ReportOutbox/deliver(now:timeout:judgedBy:route:)``), which sends them to
    /// their https collectors over any path: so a round's verdict is never held up by
    /// a collector an interceptor blackholes.
    public func checkAll(
        path: [String: String] = [:], at time: Date? = nil, behindPortal: CaptivePortalEvidence? = nil,
        deliverReports: Bool = true
    ) async -> Round {
        let hosts = configuration.probedHosts
        let outcomes = await withTaskGroup(of: (Int, Outcome).self) { group in
            for (index, host) in hosts.enumerated() {
                group.addTask { (index, await self.check(host.pattern.domain, configuration: host, at: time)) }
            }
            var outcomes = [Outcome?](repeating: nil, count: hosts.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes.map { $0! }
        }.map { behindPortal?.isCredible == true ? $0.judgedBehindPortal() : $0 }
        var round = Round(overall: TrustSummary(outcomes.map(\.result)), hosts: outcomes.map(\.result), reports: [], reportErrors: [])
        for (host, outcome) in zip(hosts, outcomes) {
            guard let spool else { break }
            do {
                guard let report = try outcome.report(for: host, path: path, behindPortal: behindPortal),
                    let written = try spool.write(report, deliverTo: host.reportURIs)
                else { continue }
                round.reports.append(report)
                round.evicted += written.evicted
            } catch {
                round.reportErrors.append("\(host.pattern): a pin-failure report was not written: \(error)")
                round.reportFailures += 1
            }
        }
        guard let spool else { return round }
        // New reports and those still waiting from earlier rounds, after they are on disk.
        if deliverReports, ReportRoute(connectivity: path["connectivity"], trust: round.overall).allowsPlainHTTP {
            let delivery = await spool.outbox.deliver(now: time ?? Date(), timeout: configuration.timeout, judgedBy: self)
            round.reportErrors += delivery.errors
            round.reportFailures += delivery.failures
            round.reportsPending = delivery.pending
        } else {
            do {
                round.reportsPending = try spool.outbox.countPending()
            } catch {
                round.reportErrors.append("\(error)")
                round.reportFailures += 1
            }
        }
        return round
    }

    /// Checks one server by name, with the policy of the pattern that matches it
    /// (or the default evaluation), on `port` (default: the entry's, else 443).
    public func check(_ host: String, port: Int? = nil, connectingTo address: String? = nil, at time: Date? = nil) async -> HostTrustResult
    {
        await check(host, configuration: entry(for: host), port: port, connectingTo: address, at: time).result
    }

    /// The entry whose pattern matches `host`; for other hosts, the default
    /// evaluation (chain, name, TLS baseline) under the host's own name.
    func entry(for host: String) -> HostTrustConfiguration {
        configuration.hosts.lookup(host)?.value
            ?? HostTrustConfiguration(pattern: HostPattern(unconfigured: host), policy: try! TrustPolicy(requiresTLSBaseline: true))
    }

    /// A result with what the pin-failure report needs.
    struct Outcome: Sendable {
        var result: HostTrustResult
        var served: [Certificate] = []
        var validated: [Certificate] = []
        /// The failure itself, when it was judged `portal`.
        var failureBehindPortal: TrustVerdict?

        /// The failure that the validation found: what a report says.
        var failure: TrustVerdict { failureBehindPortal ?? result.verdict }

        /// The same outcome on a network whose connectivity probe found a captive portal.
        func judgedBehindPortal() -> Outcome {
            guard result.verdict.isInterception else { return self }
            var judged = self
            judged.failureBehindPortal = result.verdict
            judged.result.reason =
                "\(result.verdict.rawValue) while connectivity is portal (recorded as seen behind a captive portal; judged again once connectivity is full): \(result.reason)"
            judged.result.verdict = .portal
            return judged
        }

        /// The report this outcome calls for (nil: none); throws when it cannot be built.
        func report(
            for host: HostTrustConfiguration, path: [String: String], behindPortal: CaptivePortalEvidence?
        ) throws -> PinFailureReport? {
            guard host.isPinned, failure.isInterception else { return nil }
            return try PinFailureReport(
                dateTime: result.checkedAt, hostname: result.host, port: result.port,
                notedHostname: host.pattern.domain, includeSubdomains: host.pattern.kind != .exact,
                enforcePinning: result.enforced, served: served, validated: validated,
                knownPins: host.pinSet.map { Array($0.pins) } ?? [], validationResult: failure,
                knownPinsExpirationDate: host.pinSet?.expires, path: path,
                captivePortal: failureBehindPortal != nil || behindPortal?.isCredible == false ? behindPortal : nil)
        }
    }

    func check(
        _ host: String, configuration: HostTrustConfiguration, port: Int? = nil,
        connectingTo address: String? = nil, at time: Date?
    ) async -> Outcome {
        let port = port ?? configuration.port
        let now = time ?? Date()
        var result = Self.pending(host, port: port, configuration: configuration, at: now)
        let presented: TLSProbe.Presented
        let connection: NegotiatedTLS
        switch await handshake(
            host, port: port, address: address ?? configuration.connect, baseline: configuration.policy.requiresTLSBaseline)
        {
        case let .failure(failure):
            result.reason = failure.reason
            return Outcome(result: result)
        case let .success(answer):
            (presented, connection) = answer
        }
        return await evaluate(presented, connection: connection, into: result, configuration: configuration, at: time)
    }

    /// Judges a saved chain (leaf first) for `host` — a DNS name, an IP address, or
    /// nil for no name check — with the policy of the pattern that matches it, as
    /// `check` would have judged it on the wire, minus what only a handshake shows.
    public func verify(_ chain: [Certificate], host: String?, at time: Date? = nil) async -> HostTrustResult {
        var configuration = entry(for: host ?? "")
        if host == nil { configuration.policy.validateHost = false }
        let result = Self.pending(host ?? "", port: configuration.port, configuration: configuration, at: time ?? Date())
        return await evaluate(
            TLSProbe.Presented(chain: chain), connection: nil, into: result,
            configuration: configuration, at: time
        ).result
    }

    /// A report collector's server judged as a host: nil when its chain validates
    /// under the policy of the entry that matches `host` (pins included) or the
    /// default evaluation, else why not.
    func judgeCollector(_ host: String, chain: [Certificate]) async -> String? {
        let result = await verify(chain, host: host)
        return [.trusted, .pinsExpired].contains(result.verdict) ? nil : "\(result.verdict.rawValue): \(result.reason)"
    }

    /// A result before anything is known: unreachable until a handshake says otherwise.
    static func pending(_ host: String, port: Int, configuration: HostTrustConfiguration, at time: Date) -> HostTrustResult {
        HostTrustResult(
            host: host, port: port, pattern: configuration.pattern.description, verdict: .unreachable, reason: "",
            enforced: configuration.pinSet?.enforce ?? true, tlsVersion: nil, presentedPins: [], warning: nil,
            checkedAt: time)
    }

    func evaluate(
        _ presented: TLSProbe.Presented, connection: NegotiatedTLS?, into result: HostTrustResult,
        configuration: HostTrustConfiguration, at time: Date?
    ) async -> Outcome {
        var result = result
        result.tlsVersion = presented.tlsVersion
        result.presentedPins = presented.chain.compactMap { try? PublicKeyPin(certificate: $0) }
        if let undecodable = presented.undecodable {
            (result.verdict, result.reason) = (.chainInvalid, undecodable)
            return Outcome(result: result, served: presented.chain)
        }
        // A clock not yet synchronised cannot retire pins: one set ahead (a spoofed time source)
        // would otherwise stop their enforcement. Until it is synchronised they are enforced.
        let pinsExpired =
            (configuration.pinSet?.hasExpired(at: result.checkedAt) ?? false)
            && (time != nil || self.configuration.clock.isSynchronized)
        let prepared = evaluators[configuration.pattern] ?? Self.evaluators(for: configuration.policy, systemAnchors: systemAnchors)
        var context = ServerTrustContext(host: result.host, presented: presented.chain, connection: connection, validationTime: time)
        let evaluation = await (pinsExpired ? prepared.pinsExpired : prepared.policy).evaluate(&context)
        (result.verdict, result.reason) = (evaluation.verdict, evaluation.reason)
        // Judged at the wall clock's now (no time given): an expiry means nothing until that clock is set.
        if evaluation.verdict == .expired, time == nil, !self.configuration.clock.isSynchronized {
            (result.verdict, result.reason) = (
                .clockUnsynchronized,
                "\(evaluation.reason), but the clock is not synchronised yet (\(self.configuration.clock.description)): judged again once it is"
            )
        }
        result.certificateExpires = context.validated?.map(\.notValidAfter).min()
        if pinsExpired && evaluation.verdict == .trusted {
            let day = configuration.pinSet!.expires!.formatted(Date.ISO8601FormatStyle().year().month().day())
            (result.verdict, result.reason) = (.pinsExpired, "the pins expired after \(day) and are not enforced; \(evaluation.reason)")
        } else if evaluation.verdict == .pinMismatch && !result.enforced {
            result.reason += " (report-only: not enforced)"
        } else if evaluation.verdict == .trusted, let pinSet = configuration.pinSet {
            result.warning = pinSet.backupWarning(for: context.validated ?? presented.chain)
        }
        return Outcome(result: result, served: presented.chain, validated: context.validated ?? [])
    }

    /// The handshake a policy asks for. Under the TLS baseline the client offers
    /// what ATS allows (TLS 1.2+, forward-secret suites); when the server refuses,
    /// a second, permissive handshake tells a server below the baseline (verdict
    /// `tls-policy`, with what it negotiated) from one that is not there.
    func handshake(
        _ host: String, port: Int, address: String?, baseline: Bool
    ) async -> Result<(TLSProbe.Presented, NegotiatedTLS), TLSProbe.Failure> {
        let timeout = configuration.timeout.timeAmount
        let permissive = TLSProbe(connectTimeout: timeout, handshakeTimeout: timeout)
        if baseline {
            let strict = TLSProbe(
                connectTimeout: timeout, handshakeTimeout: timeout, minimumTLSVersion: .tlsv12,
                cipherSuites: TLSPolicyEvaluator.forwardSecretCipherSuites)
            switch await strict.probe(host: host, port: port, connectingTo: address) {
            case let .success(presented):
                return .success((presented, NegotiatedTLS(version: presented.tlsVersion, forwardSecret: true)))
            case let .failure(failure) where failure.isUnreachable:
                return .failure(failure)
            case .failure:
                break
            }
        }
        switch await permissive.probe(host: host, port: port, connectingTo: address) {
        case let .success(presented):
            // Reached only after the baseline handshake failed: at TLS 1.2+ that means no forward secrecy.
            let forwardSecret: Bool? = baseline ? (presented.tlsVersion == .tlsv13 ? nil : false) : nil
            return .success((presented, NegotiatedTLS(version: presented.tlsVersion, forwardSecret: forwardSecret)))
        case let .failure(failure):
            return .failure(.unreachable(failure.isUnreachable ? failure.reason : "TLS handshake failed: \(failure.reason)"))
        }
    }
}

extension TLSProbe.Failure {
    /// No server answered (as opposed to a failed handshake).
    public var isUnreachable: Bool { if case .unreachable = self { true } else { false } }
}
