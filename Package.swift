// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "reachd",
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        .executable(name: "reachctl", targets: ["reachctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // libnl-3 + libnl-route-3 headers and link flags.
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        // C that Swift cannot express: setns (needs _GNU_SOURCE).
        .target(name: "CNetlinkShim"),
        // Typed Swift over rtnetlink; the only module with unsafe pointer work.
        .target(name: "Netlink", dependencies: ["CNetlink", "CNetlinkShim"]),
        // A small TOML reader that keeps line numbers for error messages.
        .target(name: "TOML"),
        // The monitor itself, on FoundationEssentials only: what reachctl and reachd link.
        .target(name: "ReachabilityCore", dependencies: ["Netlink", "TOML"]),
        // The library product: the core, plus NotificationCenter (full Foundation) for apps.
        .target(name: "Reachability", dependencies: ["ReachabilityCore"]),
        .executableTarget(
            name: "reachctl",
            dependencies: [
                "ReachabilityCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "reachability-bench", dependencies: ["ReachabilityCore", "Netlink", "NamespaceTesting"]),

        // Test support: network namespaces the tests create and always remove.
        .target(name: "CTestSupport", path: "Tests/CTestSupport"),
        .target(name: "NamespaceTesting", dependencies: ["Netlink", "CTestSupport"], path: "Tests/NamespaceTesting"),
        .testTarget(name: "TOMLTests", dependencies: ["TOML"]),
        .testTarget(name: "NetlinkTests", dependencies: ["Netlink", "NamespaceTesting"]),
        .testTarget(name: "ReachabilityTests", dependencies: ["Reachability", "ReachabilityCore", "Netlink", "NamespaceTesting"]),
        .testTarget(name: "ReachctlTests", dependencies: ["NamespaceTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
