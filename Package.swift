// swift-tools-version:6.1
import PackageDescription

// What an app pays for is what it uses (docs/swift-libraries.md, "Use it in your package"): the TLS
// packages and swift-argument-parser are dependencies only under a trait, so an app that turns the
// traits off (`traits: []`) fetches and builds swift-system beside Reachability, ReachabilityClient and
// ReachabilityCompat, and nothing else. Both traits are on by default: this package's own programs,
// and an app that names no traits, build as they always did.
let serverTrust: TargetDependencyCondition? = .when(traits: ["ServerTrust"])
let programs: TargetDependencyCondition? = .when(traits: ["Programs"])

/// A product of another package that only the `ServerTrust` trait brings in.
func tls(_ name: String, _ package: String) -> Target.Dependency {
    .product(name: name, package: package, condition: serverTrust)
}

let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser", condition: programs)

let package = Package(
    name: "reachd",
    products: [
        .library(name: "Reachability", targets: ["Reachability"]),
        .library(name: "ServerTrust", targets: ["ServerTrust"]),
        .library(name: "ReachabilityClient", targets: ["ReachabilityClient"]),
        // Alamofire 5's NetworkReachabilityManager, on Linux (docs/swift-libraries.md).
        .library(name: "ReachabilityCompat", targets: ["ReachabilityCompat"]),
        .executable(name: "reachctl", targets: ["reachctl"]),
        .executable(name: "reachd", targets: ["reachd"]),
        .executable(name: "reachd-trust", targets: ["reachd-trust"]),
        // The three above in one binary: what the Debian package installs (docs/daemon.md, "Installed files").
        .executable(name: "reachd-multicall", targets: ["reachd-multicall"]),
        // For FuzzTesting/ (a package of its own: libFuzzer needs its own build flags).
        .library(name: "ParserFuzzing", targets: ["ParserFuzzing"])
    ],
    traits: [
        .trait(
            name: "ServerTrust",
            description:
                "The ServerTrust library: TLS pins and validation on swift-nio, swift-nio-ssl, swift-crypto and swift-certificates."
        ),
        .trait(
            name: "Programs",
            description: "reachd, reachctl and reachd-trust: swift-argument-parser, and ServerTrust for reachd-trust.",
            enabledTraits: ["ServerTrust"]
        ),
        .default(enabledTraits: ["ServerTrust", "Programs"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // FileDescriptor and Errno (already in the graph through swift-nio).
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // `swift package generate-documentation`: the libraries' DocC site (make api-docs, in make test).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        // libnl-3's headers and link flags: the socket, message building and the attribute API
        // (reachd reads every message's attributes itself, so libnl-route-3's objects are not linked).
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-3.0",
            providers: [.apt(["libnl-3-dev"])]
        ),
        // libsystemd: sd-bus, sd-event, sd-daemon.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // What Swift cannot express of sd-bus: a vtable built from a BusInterface declaration, the variadic calls.
        .target(name: "CSystemdShim", dependencies: ["CSystemd"]),
        // The Linux calls Swift cannot reach (_GNU_SOURCE's setns, ppoll, pipe2, accept4 and ucred; adjtimex).
        .target(name: "CLinuxShim"),
        // reachctl's list of the lines a change's wake-up touches, loaded at once when it wakes
        // (release/wake-lines.sh); only the programs link it, so an app carries no list.
        .target(name: "CWakeLines"),
        // IPv4 and IPv6 addresses, and RFC 6052's NAT64 prefixes: values, no system call.
        .target(name: "IPAddresses"),
        // The system calls beneath the loops, in swift-system's style (its FileDescriptor and Errno,
        // one retry on EINTR): poll, the wake pipe, inotify, the probe's TCP connection, name
        // resolution off the loop, and a thread of its own.
        .target(name: "SystemCalls", dependencies: ["IPAddresses", "CLinuxShim", .product(name: "SystemPackage", package: "swift-system")]),
        // HTTP/1.x heads as bytes: the connectivity probe's responses, the metrics server's requests
        // (the TLS clients' HTTP is swift-nio's, in ServerTrust).
        .target(name: "HTTPWire"),
        // Typed Swift over rtnetlink: sockets, dumps, events, route lookups, namespaces.
        // With SystemCalls and the bus, the only modules with unsafe pointer work.
        .target(name: "Netlink", dependencies: ["IPAddresses", "CNetlink", "CLinuxShim", "SystemCalls"]),
        // The trust checker's words, shared by everything that speaks of trust: a host's verdict, the
        // overall verdict, the TrustStatus document, the evidence of a captive portal.
        .target(name: "TrustVocabulary"),
        // A small TOML reader that keeps line numbers for error messages.
        .target(name: "TOML", dependencies: [.product(name: "SystemPackage", package: "swift-system")]),
        // The monitor itself, on FoundationEssentials only: what reachctl and reachd link.
        .target(name: "ReachabilityCore", dependencies: ["IPAddresses", "HTTPWire", "Netlink", "SystemCalls", "TOML", "TrustVocabulary"]),
        // The library product: the core, plus NotificationCenter (full Foundation) for apps.
        .target(name: "Reachability", dependencies: ["ReachabilityCore"]),
        // Says, before anything of ServerTrust compiles, that it needs its trait: built without it, the
        // TLS packages are missing and the compiler would stop at the first import, naming only the module.
        .target(name: "ServerTraitCheck"),
        // TLS trust: certificates, pins, chain and host validation.
        .target(
            name: "ServerTrust",
            dependencies: [
                "ServerTraitCheck",
                "TOML",
                "TrustVocabulary",
                "CLinuxShim",
                .product(name: "SystemPackage", package: "swift-system"),
                tls("X509", "swift-certificates"),
                tls("SwiftASN1", "swift-asn1"),
                tls("Crypto", "swift-crypto"),
                tls("_CryptoExtras", "swift-crypto"),
                tls("NIOCore", "swift-nio"),
                tls("NIOPosix", "swift-nio"),
                tls("NIOConcurrencyHelpers", "swift-nio"),
                tls("NIOTLS", "swift-nio"),
                tls("NIOHTTP1", "swift-nio"),
                tls("NIOSSL", "swift-nio-ssl")
            ]
        ),
        // sd-bus and sd-event, thinly typed: the event loop, connections, messages, interfaces declared
        // once (BusInterface), one back-pressure rule for served state (StateSubscription).
        .target(name: "SDBus", dependencies: ["CSystemd", "CSystemdShim", "CLinuxShim", "SystemCalls"]),
        // io.reachd.Reachability1 as the daemon and its clients both name it, and where the private socket is.
        .target(name: "ReachabilityContract", dependencies: ["SDBus", "SystemCalls"]),
        // The daemon's object on the bus: io.reachd.Reachability1 served, its subscribers, the private socket.
        .target(
            name: "ReachabilityBus",
            dependencies: ["IPAddresses", "SDBus", "ReachabilityContract", "CSystemd", "CSystemdShim", "CLinuxShim", "SystemCalls"]),
        // The NetworkManager-compatible surface ([compat] networkmanager): what NetworkManager would
        // say of a path, its objects on the bus, and its name, which yields to a real NetworkManager.
        .target(name: "NetworkManagerSurface", dependencies: ["SDBus", "ReachabilityCore", "CSystemd", "CSystemdShim"]),
        // Prometheus exposition, served on the daemon's loop and written as a node_exporter textfile.
        .target(name: "ReachdMetrics", dependencies: ["IPAddresses", "CLinuxShim", "HTTPWire", "SDBus", "SystemCalls", "TOML"]),
        // Swift apps subscribe to reachd (bus name, then private socket).
        .target(
            name: "ReachabilityClient",
            dependencies: ["ReachabilityCore", "SDBus", "ReachabilityContract", "SystemCalls", "CSystemd", "TrustVocabulary"]),
        // Alamofire's NetworkReachabilityManager API over the client (daemon) or the monitor (in process).
        .target(name: "ReachabilityCompat", dependencies: ["IPAddresses", "ReachabilityClient", "SystemCalls"]),
        // The daemon's decisions that need no loop, each testable alone: when trust rounds, report deliveries
        // and captive-portal API queries run; which paths WatchPath() watches.
        .target(name: "DaemonDecisions", dependencies: ["IPAddresses", "ReachabilityCore", "TrustHelperMessages"]),
        // The daemon as a library (reachd is its one-line executable): Daemon wires one component per
        // concern on one sd-event thread; no TLS code (trust checks run in reachd-trust), and no
        // swift-argument-parser (its four options are parsed by hand).
        .target(
            name: "ReachdProgram",
            dependencies: [
                "IPAddresses",
                "DaemonDecisions", "NetworkManagerSurface", "ReachabilityCore", "ReachabilityBus", "ReachabilityContract", "SDBus",
                "ReachdMetrics",
                "SystemCalls", "CLinuxShim", "CSystemd",
                "TOML", "ProgramSupport", "TrustHelperMessages"
            ]
        ),
        .executableTarget(name: "reachd", dependencies: ["ReachdProgram"]),
        // What the three programs share: their version, written once (the Makefile reads it for the
        // package), and where the helper programs are (beside the running one, or in ../libexec).
        .target(name: "ProgramSupport"),
        // What reachd-trust answers reachd, typed (the JSON both sides of the pipe read).
        .target(name: "TrustHelperMessages", dependencies: ["ReachabilityCore", "TrustVocabulary"]),
        // reachctl's output and error format, and the help texts of `reachctl trust`.
        .target(
            name: "ReachctlSupport",
            dependencies: ["TOML", argumentParser, .product(name: "SystemPackage", package: "swift-system")]
        ),
        // `reachctl trust check|verify|pin|diagnose`: TLS, so they run in reachd-trust.
        .target(
            name: "TrustCommands",
            dependencies: [
                "ServerTrust", "ReachctlSupport",
                tls("X509", "swift-certificates"),
                tls("NIOCore", "swift-nio"),
                tls("NIOSSL", "swift-nio-ssl"),
                argumentParser
            ]
        ),
        // reachd-trust as a library: the TLS side, a process of its own for each round.
        .target(
            name: "ReachdTrustProgram",
            dependencies: [
                "ServerTrust", "TrustCommands", "TrustHelperMessages", "ReachabilityCore", "ProgramSupport",
                tls("X509", "swift-certificates")
            ]
        ),
        .executableTarget(name: "reachd-trust", dependencies: ["ReachdTrustProgram"]),
        // reachctl as a library: no TLS code (the trust commands that need it run in reachd-trust).
        .target(
            name: "ReachctlProgram",
            dependencies: [
                "ReachabilityCore", "ReachabilityClient", "ReachctlSupport", "ProgramSupport",
                argumentParser
            ]
        ),
        .executableTarget(name: "reachctl", dependencies: ["ReachctlProgram", "CWakeLines"]),
        // What the package installs: the three programs in one binary, run under their names.
        .executableTarget(
            name: "reachd-multicall", dependencies: ["ReachdProgram", "ReachctlProgram", "ReachdTrustProgram", "CWakeLines"]
        ),
        // Every parser of outside input, reachable from bytes: fuzzed, and replayed by the tests.
        .target(
            name: "ParserFuzzing",
            dependencies: ["IPAddresses", "TOML", "Netlink", "ReachabilityCore", "ServerTrust", "SystemCalls", "TrustHelperMessages"]
        ),

        // Test support: network namespaces the tests create and always remove.
        .target(name: "CTestSupport", path: "Tests/CTestSupport"),
        .target(
            name: "NamespaceTesting",
            dependencies: ["Netlink", "CTestSupport", .product(name: "SystemPackage", package: "swift-system")],
            path: "Tests/NamespaceTesting"),
        // A network namespace without a kernel: links, addresses and routes a test sets, their events as the
        // kernel's datagrams, its FIB's answers, a virtual clock: the monitor's decisions tested as any user.
        .target(
            name: "EmbeddedKernel", dependencies: ["IPAddresses", "Netlink", "ReachabilityCore", "SystemCalls"],
            path: "Tests/EmbeddedKernel"),
        // Traits: `.needsNamespaces`, `.needsTun`, `.needsRoot(why)` (skipped with the reason when not met), `.ownThreads`
        // (tests that wait for programs); CTestSupport puts an ordinary user's test process in namespaces of its own.
        .target(name: "TestTraits", dependencies: ["CTestSupport"], path: "Tests/TestTraits"),
        .testTarget(name: "TOMLTests", dependencies: ["TOML"]),
        .testTarget(name: "NetworkManagerSurfaceTests", dependencies: ["NetworkManagerSurface", "ReachabilityCore"]),
        .testTarget(name: "DaemonDecisionsTests", dependencies: ["DaemonDecisions", "ReachabilityCore", "TrustHelperMessages"]),
        .testTarget(
            name: "ReachdMetricsTests",
            dependencies: [
                "HTTPWire", "ReachdMetrics", "ReachabilityBus", "SDBus", "TOML", "TrustHelperMessages", "ServerTrust", "TestTraits"
            ]),
        .testTarget(name: "ParserFuzzingTests", dependencies: ["ParserFuzzing", "TestTraits"]),
        .testTarget(name: "NetlinkTests", dependencies: ["IPAddresses", "Netlink", "SystemCalls", "NamespaceTesting", "TestTraits"]),
        .testTarget(
            name: "ReachabilityTests",
            dependencies: [
                "IPAddresses",
                "Reachability", "ReachabilityCore", "Netlink", "SystemCalls", "TOML", "NamespaceTesting", "EmbeddedKernel", "TestTraits"
            ]),
        .testTarget(
            name: "ReachabilityCompatTests",
            dependencies: [
                "IPAddresses",
                "ReachabilityCompat", "ReachabilityClient", "ReachabilityCore", "Netlink", "SystemCalls", "NamespaceTesting",
                "EmbeddedKernel", "TestTraits"
            ]),
        .testTarget(name: "ReachctlTests", dependencies: ["NamespaceTesting", "TestTraits"]),
        .testTarget(
            name: "ReachdProgramTests",
            dependencies: [
                "IPAddresses",
                "ReachdProgram", "ReachabilityBus", "SDBus", "ReachabilityCore", "ReachdMetrics", "Netlink", "SystemCalls",
                "EmbeddedKernel", "NamespaceTesting",
                "TestTraits"
            ]),
        .testTarget(
            name: "ReachdTests",
            dependencies: [
                "IPAddresses",
                "NamespaceTesting", "EmbeddedKernel", "ReachdProgram", "ReachabilityBus", "SDBus", "ReachabilityClient",
                "ReachabilityCompat",
                "ReachabilityCore", "Netlink", "SystemCalls", "ProgramSupport", "TestTraits"
            ]),
        .testTarget(
            name: "ServerTrustTests",
            dependencies: [
                "ServerTrust",
                "SystemCalls",
                "TestTraits",
                "TOML",
                tls("X509", "swift-certificates"),
                tls("Crypto", "swift-crypto"),
                tls("SwiftASN1", "swift-asn1"),
                tls("NIOCore", "swift-nio"),
                tls("NIOPosix", "swift-nio"),
                tls("NIOSSL", "swift-nio-ssl"),
                tls("NIOTLS", "swift-nio"),
                tls("NIOHTTP1", "swift-nio"),
                tls("NIOConcurrencyHelpers", "swift-nio")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)

// The benchmarks (make bench) are built only when asked — REACHD_BENCHMARKS=1, as make bench and make test's
// bench-build do — so that a plain `swift build` or `swift test` compiles none of their 2,000 lines.
if Context.environment["REACHD_BENCHMARKS"] == "1" {
    package.targets.append(
        .executableTarget(
            name: "reachability-bench",
            dependencies: [
                "IPAddresses",
                "ReachabilityCore", "ReachabilityBus", "ReachabilityContract", "SDBus", "ReachabilityClient", "Netlink", "SystemCalls",
                "NamespaceTesting", "ServerTrust",
                tls("X509", "swift-certificates"),
                tls("Crypto", "swift-crypto"),
                tls("SwiftASN1", "swift-asn1"),
                tls("NIOCore", "swift-nio"),
                tls("NIOPosix", "swift-nio"),
                tls("NIOTLS", "swift-nio"),
                tls("NIOSSL", "swift-nio-ssl")
            ]
        )
    )
}
