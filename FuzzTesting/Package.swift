// swift-tools-version:5.4
// The libFuzzer driver, a package of its own: it is built with
// `-sanitize=fuzzer,address -parse-as-library` (every target of a build gets
// -Xswiftc flags), and tools-version 5.4 keeps the executable's entry point
// libFuzzer's `main` (later versions rename it). `make fuzz` builds and runs it.
import PackageDescription

let package = Package(
    name: "FuzzTesting",
    dependencies: [.package(name: "reachd", path: "..")],
    targets: [
        .executableTarget(name: "reachd-fuzz", dependencies: [.product(name: "ParserFuzzing", package: "reachd")])
    ]
)
