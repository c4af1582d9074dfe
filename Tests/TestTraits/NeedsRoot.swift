import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Trait where Self == ConditionTrait {
    /// For suites that create network namespaces, run daemons under other users or
    /// own bus names: skipped, with this reason, when the tests do not run as root.
    /// `swift test` as an ordinary user runs everything else; `make test` (root) runs all.
    public static var needsRoot: Self {
        .enabled(if: geteuid() == 0, "needs root: it creates network namespaces (run make test, or swift test as root)")
    }
}
