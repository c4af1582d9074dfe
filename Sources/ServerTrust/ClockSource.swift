import CLinuxShim

#if canImport(Glibc)
import Glibc
#endif

/// Whether the wall clock can be believed yet. A device without a real-time clock
/// boots in 1970 or wherever it was last saved; until a time daemon has set it,
/// every certificate looks expired or not yet valid — a fault of the clock, not
/// an attack (docs/security.md, "Time").
public enum ClockSource: Sendable, Equatable {
    /// systemd-timesyncd's flag (`/run/systemd/timesync/synchronized`), else the
    /// kernel's own word (`adjtimex`: no `STA_UNSYNC`, which chrony and ntpd clear).
    case system
    /// Only this file, present once the clock is synchronised (`clock-synchronized =`
    /// in `[trust]`, for a time daemon that touches a file of its own).
    case flagFile(String)

    /// systemd-timesyncd touches it at each synchronisation.
    public static let timesyncdFlag = "/run/systemd/timesync/synchronized"

    /// Whether the clock is synchronised now.
    public var isSynchronized: Bool {
        switch self {
        case let .flagFile(path):
            return access(path, F_OK) == 0
        case .system:
            if access(Self.timesyncdFlag, F_OK) == 0 { return true }
            return reachd_kernel_clock_synchronized() == 1
        }
    }

    /// Where it is read, for the reason a verdict gives.
    public var description: String {
        switch self {
        case let .flagFile(path): "no \(path)"
        case .system: "no \(Self.timesyncdFlag), and the kernel says unsynchronised"
        }
    }
}
