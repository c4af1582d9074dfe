#if canImport(Glibc)
import Glibc
#endif

/// Shell-style interface name patterns (`docker*`, `veth?`, `en[ps]*`).
enum Glob {
    static func matches(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern, name, 0) == 0
    }
}
