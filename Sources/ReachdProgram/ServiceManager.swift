import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// What the daemon tells systemd (sd_notify(3), `Type=notify-reload`): ready, the
/// status line `systemctl status` shows, and reloads with their monotonic time.
enum ServiceManager {
    static func ready(status: String? = nil) { notify("READY=1" + (status.map { "\nSTATUS=\($0)" } ?? "")) }

    static func status(_ line: String) { notify("STATUS=\(line)") }

    static func reloading() { notify("RELOADING=1\nMONOTONIC_USEC=\(monotonicMicroseconds())") }

    private static func notify(_ state: String) { _ = sd_notify(0, state) }

    private static func monotonicMicroseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1000
    }
}
