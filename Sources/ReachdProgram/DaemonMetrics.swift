import FoundationEssentials
import ProgramSupport
import ReachabilityCore
import ReachdMetrics
import TrustHelperMessages

/// What reachd counts for Prometheus, and the metric families of docs/metrics.md
/// built from it and from the daemon's current state at each scrape.
final class DaemonMetrics {
    /// Documents published (StatusChanged emitted), since start.
    var pathChanges = 0
    /// The counts of engines replaced by a reload (the running engine counts its own).
    var earlierEngines = PathEngine.Statistics()
    /// Per configured host: rounds that judged it, and enforced pin failures. Labels are
    /// the config's hosts only: a host removed by a reload loses its series.
    var trustChecks: [String: Int] = [:]
    var pinFailures: [String: Int] = [:]
    var pinFailuresBehindPortal: [String: Int] = [:]
    /// Rounds killed at their deadline.
    var roundsKilled = 0
    /// Reports evicted to keep the spool and the outbox within their capacity.
    var reportsEvicted = 0
    /// Reports lost or unaccounted for, as rounds and delivery passes counted them.
    var reportFailures = 0

    func count(_ round: TrustRound) {
        for host in round.hosts { trustChecks[host.host, default: 0] += 1 }
        for host in round.pinFailures { pinFailures[host, default: 0] += 1 }
        for host in round.pinFailuresBehindPortal { pinFailuresBehindPortal[host, default: 0] += 1 }
        reportsEvicted += round.evicted.count
        reportFailures += round.reportFailures
        let hosts = Set(round.hosts.map(\.host))
        trustChecks = trustChecks.filter { hosts.contains($0.key) }
        pinFailures = pinFailures.filter { hosts.contains($0.key) }
        pinFailuresBehindPortal = pinFailuresBehindPortal.filter { hosts.contains($0.key) }
    }

    /// What the daemon knows at this moment.
    struct State {
        var status: ReachabilityStatus
        var connectivity: Connectivity
        var trust: TrustSummary
        var round: TrustRound?
        /// The current engine's counts (those of the engines before a reload are `earlierEngines`).
        var engine: PathEngine.Statistics
        var reportsPending: Int
        var dns: Path.DNS?
        /// Where the path's IPv4 comes from, and the network's NAT64.
        var ipv4Via: Path.IPv4Via = .none
        var nat64: Path.NAT64?
        /// The available interfaces, each with its own verdict where one was judged.
        var interfaces: [Path.InterfaceState] = []
        /// The captive-portal API's state, and its queries' outcomes so far.
        var capport: Path.CaptivePortal?
        var capportQueries: (ok: Int, invalid: Int, failed: Int)
        var now = Date()
    }

    func families(_ state: State) -> [MetricFamily] {
        typealias Sample = MetricFamily.Sample
        let hosts = state.round?.hosts ?? []
        let engines = earlierEngines + state.engine
        let usable = [.wifi, .wired, .cellular].contains(state.status)
        return [
            MetricFamily(
                "reachd_build_info", .gauge, help: "reachd's version; always 1.",
                samples: [Sample([.init("version", reachdVersion)], 1)]),
            .gauge("reachd_path_up", help: "1 when the path is usable (wifi, wired or cellular), else 0.", usable ? 1 : 0),
            MetricFamily(
                "reachd_path_status", .gauge, help: "The path's status: 1 for the current one, 0 for the others.",
                samples: MetricFamily.stateSet(
                    label: "status",
                    states: ReachabilityStatus.allCases.map(\.rawValue), current: state.status.rawValue)),
            .counter("reachd_path_changes_total", help: "Path documents published (each a StatusChanged signal).", pathChanges),
            MetricFamily(
                "reachd_connectivity", .gauge, help: "Whether the path reaches the Internet: 1 for the current state, 0 for the others.",
                samples: MetricFamily.stateSet(
                    label: "state", states: Connectivity.allCases.map(\.rawValue),
                    current: state.connectivity.rawValue)),
            MetricFamily(
                "reachd_dns_servers", .gauge,
                help: "DNS servers configured (state=\"configured\") and reachable by the path (state=\"usable\"), by source.",
                samples: state.dns.map { dns in
                    [
                        Sample([.init("source", dns.source.rawValue), .init("state", "configured")], Double(dns.servers.count)),
                        Sample([.init("source", dns.source.rawValue), .init("state", "usable")], Double(dns.usable.count))
                    ]
                } ?? []),
            MetricFamily(
                "reachd_path_ipv4_via", .gauge,
                help: "Where the path's IPv4 comes from (native, clat, nat64, none): 1 for the current one, 0 for the others.",
                samples: MetricFamily.stateSet(label: "via", states: Path.IPv4Via.allCases.map(\.rawValue), current: state.ipv4Via.rawValue)
            ),
            MetricFamily(
                "reachd_nat64_prefix_info", .gauge,
                help: "The network's NAT64 prefix and where it was learnt; always 1, absent when none is known.",
                samples: state.nat64.map { [Sample([.init("prefix", $0.prefix), .init("source", $0.source.rawValue)], 1)] } ?? []),
            MetricFamily(
                "reachd_way_out_connectivity", .gauge,
                help: "Each available interface's own verdict (every way out judged): 1 for the current state, 0 for the others.",
                samples: state.interfaces.flatMap { entry in
                    entry.connectivity.map {
                        MetricFamily.stateSet(
                            label: "state", states: Connectivity.allCases.map(\.rawValue), current: $0.rawValue,
                            labels: [.init("interface", entry.name)])
                    } ?? []
                }),
            MetricFamily(
                "reachd_captive_portal_captive", .gauge,
                help: "What the network's captive-portal API (RFC 8908) answered: 1 captive, 0 not; absent without an answer.",
                samples: state.capport.flatMap { capport in
                    capport.captive.map { [Sample([.init("source", capport.source.rawValue)], $0 ? 1 : 0)] }
                } ?? []),
            MetricFamily(
                "reachd_captive_portal_session_remaining_seconds", .gauge,
                help: "Seconds left in the captive-portal session, as the API counts it; absent when it does not.",
                samples: state.capport?.secondsRemaining(at: state.now).map { [Sample([], Double($0))] } ?? []),
            MetricFamily(
                "reachd_captive_portal_bytes_remaining", .gauge,
                help: "Bytes left in the captive-portal session, as the API counts them; absent when it does not.",
                samples: state.capport?.bytesRemaining.map { [Sample([], Double($0))] } ?? []),
            MetricFamily(
                "reachd_captive_portal_api_queries_total", .counter,
                help: "Queries of the captive-portal API, by result: ok, invalid (answered, not an RFC 8908 document), failed.",
                samples: [
                    Sample([.init("result", "ok")], Double(state.capportQueries.ok)),
                    Sample([.init("result", "invalid")], Double(state.capportQueries.invalid)),
                    Sample([.init("result", "failed")], Double(state.capportQueries.failed))
                ]),
            .counter(
                "reachd_netlink_overruns_total", help: "Netlink receive-buffer overruns (ENOBUFS), each recovered by a full re-read.",
                engines.overruns),
            .counter(
                "reachd_path_evaluations_total",
                help:
                    "Evaluations of the path: kernel changes that could move it, re-checks, DNS and NAT64 news; never a change that cannot.",
                engines.evaluations),
            MetricFamily(
                "reachd_trust_status", .gauge, help: "The overall trust verdict: 1 for the current one, 0 for the others.",
                samples: MetricFamily.stateSet(
                    label: "trust", states: TrustSummary.allCases.map(\.rawValue),
                    current: state.trust.rawValue)),
            MetricFamily(
                "reachd_trust_verdict", .gauge, help: "Each trust host's verdict in the latest round: 1 for it, 0 for the others.",
                samples: hosts.flatMap { host in
                    MetricFamily.stateSet(
                        label: "verdict", states: TrustVerdict.allCases.map(\.rawValue),
                        current: host.verdict.rawValue, labels: [.init("host", host.host)])
                }),
            MetricFamily(
                "reachd_trust_checks_total", .counter, help: "Rounds that judged each trust host.",
                samples: trustChecks.sorted { $0.key < $1.key }.map { Sample([.init("host", $0.key)], Double($0.value)) }),
            MetricFamily(
                "reachd_pin_failures_total", .counter, help: "Rounds in which a pinned host with enforced pins failed validation.",
                samples: trustChecks.keys.sorted().map { Sample([.init("host", $0)], Double(pinFailures[$0] ?? 0)) }),
            MetricFamily(
                "reachd_pin_failures_behind_portal_total", .counter,
                help:
                    "Rounds in which a pinned host with enforced pins failed validation while connectivity was portal (judged portal, reported).",
                samples: trustChecks.keys.sorted().map { Sample([.init("host", $0)], Double(pinFailuresBehindPortal[$0] ?? 0)) }),
            .counter(
                "reachd_trust_rounds_killed_total",
                help: "Trust rounds killed at their deadline (every host unknown until the next round).",
                roundsKilled),
            MetricFamily(
                "reachd_trust_cert_expiry_timestamp_seconds", .gauge,
                help: "The earliest notAfter in each trust host's validated chain (hosts whose chain validated in the latest round).",
                samples: hosts.compactMap { host in
                    host.certificateExpires.map { Sample([.init("host", host.host)], $0.timeIntervalSince1970.rounded(.down)) }
                }),
            .gauge(
                "reachd_reports_pending", help: "Pin-failure reports spooled and not yet delivered to every collector.",
                Double(state.reportsPending)),
            .counter(
                "reachd_reports_evicted_total", help: "Pin-failure reports evicted to keep the spool and the outbox within their capacity.",
                reportsEvicted),
            .counter(
                "reachd_report_failures_total",
                help:
                    "Pin-failure reports lost or unaccounted for: not built, not written, set aside unreadable, or a spool that cannot be listed.",
                reportFailures)
        ]
    }
}
