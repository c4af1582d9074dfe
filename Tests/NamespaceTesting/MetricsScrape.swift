/// The value of the one sample called `series` (with its labels, as written) in a
/// Prometheus text exposition, or nil: `reachd_path_up 1` → 1.
public func metricValue(_ series: String, in scrape: String) -> Double? {
    scrape.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
}

/// curl's `GET /metrics` from reachd's listener on 127.0.0.1:`port`.
func scrapeCommand(port: Int, accept: String?) -> [String] {
    ["curl", "-sS", "--max-time", "5"] + (accept.map { ["-H", "Accept: \($0)"] } ?? []) + ["http://127.0.0.1:\(port)/metrics"]
}

/// `GET /metrics` from reachd's listener on this network namespace's 127.0.0.1:`port`; "" when it fails.
public func scrapeMetrics(port: Int, accept: String? = nil) -> String {
    (try? run(scrapeCommand(port: port, accept: accept)).output) ?? ""
}

extension TestNamespace {
    /// `GET /metrics` from reachd's listener on 127.0.0.1 with curl inside this namespace; "" when it fails.
    public func scrapeMetrics(port: Int = 9748, accept: String? = nil) -> String {
        (try? exec(scrapeCommand(port: port, accept: accept)).output) ?? ""
    }
}
