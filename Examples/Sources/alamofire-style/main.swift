// alamofire-style [HOST]: code written against Alamofire's NetworkReachabilityManager
// API only — with `import Alamofire` it builds on Apple platforms — running on Linux.
import Dispatch
import ReachabilityCompat

let manager = NetworkReachabilityManager(host: CommandLine.arguments.dropFirst().first ?? "www.apple.com")

print("status before listening:", manager?.status ?? .unknown)

manager?.startListening(onQueue: .main) { status in
    switch status {
    case .notReachable:
        print("The network is not reachable")
    case .unknown:
        print("It is unknown whether the network is reachable")
    case .reachable(.ethernetOrWiFi):
        print("The network is reachable over the WiFi connection")
    case .reachable(.cellular):
        print("The network is reachable over the cellular connection")
    }
}

// As on macOS, a command-line program runs the main queue for its listener.
dispatchMain()
