// path-questions: NWPath's questions, asked of the kernel in process and of reachd —
// which interfaces, which gateways, whether names resolve, and whether the
// path could leave without cellular.
import ReachabilityClient

// In process: the default path, and the path that avoids cellular (NWPathMonitor(prohibitedInterfaceTypes:)).
let path = try ReachabilityMonitor.path()
print("status:", path.status, "uses Wi-Fi:", path.uses(.wifi), "VPN:", path.usesVPN)
print("gateways:", path.gateways, "interfaces by preference:", path.availableInterfaces.map(\.name))
print("DNS:", path.dns?.usable ?? [], "from", path.dns?.source.rawValue ?? "-", "supports DNS:", path.supportsDNS ?? false)

let monitor = ReachabilityMonitor(prohibitedInterfaceTypes: [.cellular])
try monitor.start()
print("without cellular:", monitor.currentPath?.status ?? .unknown)

// From reachd: the status alone (silent while addresses move), then waiting to be online.
let reachd = ReachabilityClient()
let subscription = reachd.onChange(of: \.status) { status in
    print("status changed:", status) // on the client's own queue: no main queue needed
}
if let online = await reachd.wait(until: .online, timeout: .seconds(30)) {
    print("online via", online.interface?.name ?? "-")
} else {
    print("not online after 30 s")
}
subscription.cancel()

// One server's path, as the daemon evaluates it on every kernel change (WatchPath()).
for await apiPath in reachd.paths(to: "api.example.com", interfaceTypes: [.wifi, .wired]) {
    print("api.example.com:", apiPath.status, apiPath.interface?.name ?? "-")
    break
}

// The trust verdict and each pin failure, typed.
for await trust in reachd.trustChanges {
    print("trust:", trust.overall, trust.hosts.map { "\($0.host): \($0.verdict.rawValue)" })
    break
}
monitor.stop()
