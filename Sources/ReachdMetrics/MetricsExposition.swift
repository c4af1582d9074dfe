/// The two text formats a scraper may ask for.
package enum MetricsFormat: Sendable, Equatable {
    /// Prometheus text format 0.0.4: what every scraper reads.
    case prometheus
    /// OpenMetrics 1.0.0: asked for with `Accept: application/openmetrics-text`.
    case openMetrics

    package var contentType: String {
        switch self {
        case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
        case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
        }
    }

    /// The format an `Accept` header asks for: OpenMetrics only when it names it
    /// (Prometheus sends both, OpenMetrics first, when it scrapes with it enabled).
    package init(accept: String?) {
        self = accept?.lowercased().contains("application/openmetrics-text") == true ? .openMetrics : .prometheus
    }
}

extension Array where Element == MetricFamily {
    /// The exposition, in `format`.
    package func exposition(_ format: MetricsFormat) -> String {
        var text = ""
        text.reserveCapacity(count * 128)
        // A family with no samples (no trust host yet) says nothing worth its two lines.
        for family in self where !family.samples.isEmpty {
            // OpenMetrics names the family of a counter without its _total suffix.
            let familyName = format == .openMetrics && family.kind == .counter ? String(family.name.dropLast(6)) : family.name
            text += "# HELP \(familyName) \(Self.escapeHelp(family.help))\n"
            text += "# TYPE \(familyName) \(family.kind.rawValue)\n"
            if format == .openMetrics, family.name.hasSuffix("_seconds") { text += "# UNIT \(familyName) seconds\n" }
            for sample in family.samples {
                text += family.name
                if !sample.labels.isEmpty {
                    text += "{"
                    text += sample.labels.map { "\($0.name)=\"\(Self.escapeLabel($0.value))\"" }.joined(separator: ",")
                    text += "}"
                }
                text += " \(Self.format(sample.value))\n"
            }
        }
        if format == .openMetrics { text += "# EOF\n" }
        return text
    }

    /// Whole numbers without a fraction (counters, 0/1, timestamps), others as Swift prints them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    static func escapeLabel(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    static func escapeHelp(_ text: String) -> String {
        text.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
    }
}
