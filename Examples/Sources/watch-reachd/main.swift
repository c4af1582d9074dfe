// watch-reachd: prints reachd's path now and on every change, like `reachctl watch`.
import ReachabilityClient

let reachd = ReachabilityClient() // the system bus name, then the private socket

let path = try await reachd.currentPath()
print("now:", path.status, path.interface?.name ?? "-", "connectivity", path.connectivity, "trust", path.trust)

// The current path first (initial == true), then each change; reconnects across daemon restarts.
for await path in reachd.paths {
    print(
        path.initial ? "initial:" : "change:", path.status, path.reason.map { "(\($0))" } ?? "",
        path.interface?.name ?? "-", "connectivity", path.connectivity)
}
