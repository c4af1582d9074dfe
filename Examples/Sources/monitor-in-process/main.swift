// monitor-in-process: the same path reachd computes, from the kernel, in this process.
import Reachability

let monitor = ReachabilityMonitor() // the default path
try monitor.start() // currentPath is set when this returns
print("now:", monitor.currentPath?.status ?? .unknown)

for await path in monitor.paths { // the current path first, then every change
    if path.status == .unreachable {
        print("offline:", path.reason?.rawValue ?? "?")
    } else {
        print(path.status, path.interface?.name ?? "-", path.vpn.map { "via VPN \($0.name)" } ?? "")
    }
}
