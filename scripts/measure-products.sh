#!/bin/bash
# measure-products.sh [TREE] [before|after] — what each library product costs a fresh app:
# the packages SwiftPM fetches, the Swift modules it compiles, the clean debug build's
# time and the app's .build size (docs/swift-libraries.md, "Use it in your package").
# TREE is a copy of reachd (default: this repository's HEAD); `before` measures an app
# that names no traits, as every app did before the package had any.
set -u
mode=${2:-after}
root=$(mktemp -d /tmp/reachd-products.XXXXXX)
trap 'rm -rf "$root"' EXIT
if [ -n "${1:-}" ]; then cp -a "$1" "$root/reachd"; else mkdir "$root/reachd"; git -C "$(dirname "$0")/.." archive HEAD | tar -x -C "$root/reachd"; fi
label=$mode
for product in Reachability ReachabilityClient ReachabilityCompat ServerTrust; do
  app=$root/app-$product
  mkdir -p $app/Sources/App
  case $mode in
    before) traits="" ;;
    after) [ $product = ServerTrust ] && traits=', traits: ["ServerTrust"]' || traits=', traits: []' ;;
  esac
  cat > $app/Package.swift <<PKG
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "app",
    dependencies: [.package(path: "../reachd"$traits)],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "$product", package: "reachd")])]
)
PKG
  echo "import $product" > $app/Sources/App/main.swift
  case $product in
    Reachability) echo 'print(ReachabilityMonitor.self)' ;;
    ReachabilityClient) echo 'print(ReachabilityClient.self)' ;;
    ReachabilityCompat) echo 'print(NetworkReachabilityManager.self)' ;;
    ServerTrust) echo 'print(TrustConfiguration.self)' ;;
  esac >> $app/Sources/App/main.swift
  cd $app
  swift package resolve >/dev/null 2>&1
  fetched=$(ls .build/checkouts | wc -l)
  start=$(date +%s)
  swift build >build.log 2>&1; rc=$?
  end=$(date +%s)
  modules=$(ls .build/debug/Modules/*.swiftmodule 2>/dev/null | wc -l)
  size=$(du -sm .build | cut -f1)
  printf '%s\t%s\trc=%s\tfetched=%s\t(%s)\tswift-modules=%s\tbuild=%ss\t.build=%sMB\n' "$label" "$product" "$rc" "$fetched" "$(ls .build/checkouts | tr '\n' ' ')" "$modules" "$((end - start))" "$size"
done
