// swift-tools-version:6.1
import Foundation
import PackageDescription

// Programs that use reachd's libraries as an app would: each builds against the
// package one directory up (`make examples`, part of `make test`); beside them, the
// Swift blocks of the README, docs/ and DocC, each compiled as written.
let package = Package(
    name: "reachd-examples",
    dependencies: [
        // Every trait: pin-host and https-with-pins use ServerTrust (docs/swift-libraries.md, "Use it in your package").
        .package(name: "reachd", path: "..", traits: ["ServerTrust"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2")
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
                .product(name: "NIOSSL", package: "swift-nio-ssl")
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
                .product(name: "AsyncHTTPClient", package: "async-http-client")
            ]
        ),
        // A long-running service that pauses its work while offline and stops cleanly on SIGTERM.
        .executableTarget(
            name: "reachability-service",
            dependencies: [
                .product(name: "ReachabilityClient", package: "reachd"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        )
    ]
)

// The Swift of the README, docs/ and DocC, one target per block (scripts/check-doc-snippets.py
// writes DocSnippets/ (not Snippets/: SwiftPM takes that for DocC snippets), `make examples` builds it): each depends on what its own imports name.
let snippetProducts: [String: Target.Dependency] = [
    "Reachability": .product(name: "Reachability", package: "reachd"),
    "ReachabilityClient": .product(name: "ReachabilityClient", package: "reachd"),
    "ReachabilityCompat": .product(name: "ReachabilityCompat", package: "reachd"),
    "ServerTrust": .product(name: "ServerTrust", package: "reachd"),
    "NIOCore": .product(name: "NIOCore", package: "swift-nio"),
    "NIOPosix": .product(name: "NIOPosix", package: "swift-nio"),
    "NIOSSL": .product(name: "NIOSSL", package: "swift-nio-ssl"),
    "AsyncHTTPClient": .product(name: "AsyncHTTPClient", package: "async-http-client"),
    "ServiceLifecycle": .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    "Logging": .product(name: "Logging", package: "swift-log")
]
let snippets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("DocSnippets")
package.targets.append(.target(name: "DocSnippetSupport"))
if let names = try? FileManager.default.contentsOfDirectory(atPath: snippets.path) {
    for name in names.sorted() {
        let source = (try? String(contentsOf: snippets.appendingPathComponent("\(name)/main.swift"), encoding: .utf8)) ?? ""
        let imports = source.split(separator: "\n").filter { $0.hasPrefix("import ") }.map { String($0.dropFirst("import ".count)) }
        package.targets.append(
            .executableTarget(
                name: name, dependencies: ["DocSnippetSupport"] + imports.compactMap { snippetProducts[$0] },
                path: "DocSnippets/\(name)"))
    }
}
