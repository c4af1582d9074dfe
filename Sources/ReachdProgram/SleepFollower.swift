import SDBus

/// systemd-logind's word that the host goes to sleep and wakes up (`PrepareForSleep(b)`
/// on `org.freedesktop.login1.Manager`): a laptop can sleep on one network and wake on
/// another before the kernel has said anything reachd reads, so what was found before
/// sleeping is checked again on waking (docs/daemon.md, "Sleep and resume"). Without
/// logind (a container), the signal never comes and nothing changes.
enum SleepFollower {
    static func follow(on bus: BusConnection, sleeping: @escaping () -> Void, resumed: @escaping () -> Void) throws(BusError) {
        try bus.onSignal(
            sender: "org.freedesktop.login1", path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
            member: "PrepareForSleep"
        ) { message in
            switch message.bool() {
            case true?: sleeping()
            case false?: resumed()
            case nil: break
            }
        }
    }
}
