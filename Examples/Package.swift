// swift-tools-version:6.0
import PackageDescription

// Programs that use reachd's libraries as an app would: each builds against the
// package one directory up (`make examples`, part of `make test`), and the README
// and docs take their code from here.
let package = Package(
    name: "reachd-examples",
    dependencies: [
        .package(name: "reachd", path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // Subscribes to reachd (bus name, then private socket) and prints every change.
        .executableTarget(name: "watch-reachd", dependencies: [.product(name: "ReachabilityClient", package: "reachd")]),
        // Watches the kernel in-process, without the daemon.
        .executableTarget(name: "monitor-in-process", dependencies: [.product(name: "Reachability", package: "reachd")]),
        // Connects to a host with reachd's trust policy from a config file.
        .executableTarget(
            name: "pin-host",
            dependencies: [
                .product(name: "ServerTrust", package: "reachd"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Alamofire's NetworkReachabilityManager code, unchanged but for `import ReachabilityCompat`.
        .executableTarget(name: "alamofire-style", dependencies: [.product(name: "ReachabilityCompat", package: "reachd")]),
        // NWPath's questions: interface types, gateways, DNS, status-only changes, waiting to be online, one server's path.
        .executableTarget(name: "path-questions", dependencies: [.product(name: "ReachabilityClient", package: "reachd")]),
        // An AsyncHTTPClient request under what a TLSConfiguration carries of a host's trust policy.
        .executableTarget(
            name: "https-with-pins",
            dependencies: [
                .product(name: "ServerTrust", package: "reachd"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        // A long-running service that pauses its work while offline and stops cleanly on SIGTERM.
        .executableTarget(
            name: "reachability-service",
            dependencies: [
                .product(name: "ReachabilityClient", package: "reachd"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
