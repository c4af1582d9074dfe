import CTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Trait where Self == ConditionTrait {
    /// For suites and tests that need what only root has — other users, a system bus name,
    /// Reload(): skipped for an ordinary user, with `reason` (what it needs root for).
    /// `make test` (root) runs all.
    public static func needsRoot(_ reason: String) -> Self {
        .enabled(if: geteuid() == 0, "needs root: \(reason) (run make test)")
    }

    /// For suites and tests where reachd owns a name on a system-type dbus-daemon: the
    /// project's policy (like the system bus's) lets root alone own it.
    public static var needsSystemBusName: Self {
        needsRoot("reachd owns a name on a system-type dbus-daemon, whose policy grants it to root only")
    }

    /// For suites that create network namespaces: root, or an ordinary user whose test
    /// process entered user and network namespaces of its own (CTestSupport does it before
    /// main where the kernel allows unprivileged user namespaces).
    public static var needsNamespaces: Self {
        .enabled(
            if: geteuid() == 0 || reachd_tests_user_namespace(),
            "needs root or an unprivileged user namespace: it creates network namespaces (run make test)")
    }

    /// For suites that hold tun devices open: /dev/net/tun must open for reading and writing
    /// (Debian's is 0666; some containers keep it root's).
    public static var needsTun: Self {
        .enabled(if: access("/dev/net/tun", R_OK | W_OK) == 0, "needs /dev/net/tun readable and writable by this user")
    }
}
