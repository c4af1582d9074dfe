/// One metric family as Prometheus sees it: a name, a type, a help text and its
/// samples. reachd builds them from its own state at each scrape (nothing is
/// instrumented in the hot path, so there is no registry to keep in sync).
package struct MetricFamily: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case gauge, counter
    }

    /// The sample name; a counter's ends in `_total` (OpenMetrics writes the family without it).
    package var name: String
    package var kind: Kind
    package var help: String
    package var samples: [Sample]

    package struct Sample: Sendable, Equatable {
        /// Names and values, in the order written. Values come from the config and
        /// from fixed vocabularies, never from what a peer sent.
        package var labels: [Label]
        package var value: Double

        package init(_ labels: [Label], _ value: Double) {
            self.labels = labels
            self.value = value
        }

        package init(_ value: Double) { self.init([], value) }
    }

    package struct Label: Sendable, Equatable {
        package var name: String
        package var value: String

        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    package init(_ name: String, _ kind: Kind, help: String, samples: [Sample]) {
        precondition(kind != .counter || name.utf8.reversed().starts(with: "_total".utf8.reversed()), "a counter's name ends in _total")
        self.name = name
        self.kind = kind
        self.help = help
        self.samples = samples
    }

    /// A gauge with no labels.
    package static func gauge(_ name: String, help: String, _ value: Double) -> MetricFamily {
        MetricFamily(name, .gauge, help: help, samples: [Sample(value)])
    }

    /// A counter with no labels.
    package static func counter(_ name: String, help: String, _ value: Int) -> MetricFamily {
        MetricFamily(name, .counter, help: help, samples: [Sample(Double(value))])
    }

    /// A state set the node_exporter way: one sample per state, every state present,
    /// 1 for the current one (none when `current` is nil), 0 for the others.
    package static func stateSet(
        label: String, states: [String], current: String?,
        labels: [Label] = []
    ) -> [Sample] {
        states.map { Sample(labels + [Label(label, $0)], $0 == current ? 1 : 0) }
    }
}
