#!/bin/bash
# check-fresh-package.sh — an app developer's first hour, run: a package made from a clean
# copy of this repository with the manifest docs/swift-libraries.md gives ("Use it in your
# package"), which builds and runs each library product: the three light ones with
# `traits: []` (and nothing but swift-system fetched beside reachd), ServerTrust with its trait.
set -euo pipefail
SWIFT=${SWIFT:-swift}
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d /tmp/reachd-fresh-package.XXXXXX)
daemon=
trap '[ -z "$daemon" ] || kill "$daemon" 2>/dev/null; rm -rf "$scratch"' EXIT
fail() { echo "check-fresh-package: $*" >&2; exit 1; }

# A clean copy, as a clone has it, in a directory named as the docs say.
mkdir "$scratch/reachd"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$scratch/reachd"
manifest=$(awk '/^```swift Package.swift$/ { inside = 1; next } /^```$/ { if (inside) exit } inside' "$root/docs/swift-libraries.md")
grep -q '.package(path: "../reachd", traits: \[\])' <<<"$manifest" || fail "docs/swift-libraries.md has no manifest with the path dependency"

# The light products: the docs' manifest, its one target repeated for each.
light=$scratch/light-app
mkdir -p "$light"
target_line=$(grep -F '.executableTarget(name: "my-app"' <<<"$manifest")
targets=""
for product in Reachability ReachabilityClient ReachabilityCompat; do
    targets+="${target_line//my-app/uses-$product}"$'\n'
    targets=${targets//product(name: \"ReachabilityClient\"/product(name: \"$product\"}
done
awk -v line="$target_line" -v targets="$targets" '$0 == line { printf "%s", targets; next } { print }' <<<"$manifest" >"$light/Package.swift"
mkdir -p "$light/Sources/uses-Reachability" "$light/Sources/uses-ReachabilityClient" "$light/Sources/uses-ReachabilityCompat"
cat >"$light/Sources/uses-Reachability/main.swift" <<'SWIFT'
import Reachability

let monitor = ReachabilityMonitor()
try monitor.start()
print("in process:", monitor.currentPath!)
monitor.stop()
SWIFT
cat >"$light/Sources/uses-ReachabilityClient/main.swift" <<'SWIFT'
import Foundation
import ReachabilityClient

let reachd = ReachabilityClient(endpoint: ReachabilityClient.Endpoint(CommandLine.arguments[1]))
do {
    print("from reachd:", try await reachd.currentPath())
} catch {
    print("no path:", error, error.isNoDaemon ? "(no daemon)" : "")
    exit(1)
}
SWIFT
cat >"$light/Sources/uses-ReachabilityCompat/main.swift" <<'SWIFT'
import Foundation
import ReachabilityCompat

let endpoint = ReachabilityClient.Endpoint(CommandLine.arguments[1])
let manager = NetworkReachabilityManager(endpoint: endpoint)!
print("Alamofire's status:", manager.status, "from", manager.backend!)
let monitor = NWPathMonitor(endpoint: endpoint)
let first = DispatchSemaphore(value: 0)
monitor.pathUpdateHandler = { (path: NWPath) in
    print("NWPath:", path.status, path.availableInterfaces.map(\.name))
    first.signal()
}
monitor.start(queue: DispatchQueue(label: "paths"))
guard first.wait(timeout: .now() + 10) == .success else { print("no path in 10 s"); exit(1) }
monitor.cancel()
SWIFT

# ServerTrust: the same manifest with the trait the docs name.
trust=$scratch/trust-app
mkdir -p "$trust/Sources/my-app"
sed 's/traits: \[\])/traits: ["ServerTrust"])/; s/product(name: "ReachabilityClient"/product(name: "ServerTrust"/' <<<"$manifest" >"$trust/Package.swift"
cat >"$trust/Sources/my-app/main.swift" <<'SWIFT'
import ServerTrust

let trust = try TrustConfiguration.load(contentsOf: CommandLine.arguments[1])
let policy = try ClientTLSPolicy(configuration: trust, host: "api.example.com", anchorsOnly: false)
print("ServerTrust: api.example.com, not enforced by a TLSConfiguration:", policy.notEnforced)
SWIFT
cat >"$scratch/trust.toml" <<'TOML'
[[trust.host]]
match = "api.example.com"
mode = "public-key"
pins = ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "sha256/AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="]
TOML

# ServerTrust asked for with `traits: []`: the build stops saying which trait it needs.
missing=$scratch/missing-trait
mkdir -p "$missing/Sources/my-app"
sed 's/product(name: "ReachabilityClient"/product(name: "ServerTrust"/' <<<"$manifest" >"$missing/Package.swift"
echo 'import ServerTrust' >"$missing/Sources/my-app/main.swift"
if (cd "$missing" && "$SWIFT" build >"$scratch/build.log" 2>&1); then fail "ServerTrust built without its trait"; fi
grep -q "error: ServerTrust needs reachd's ServerTrust trait" "$scratch/build.log" || { tail -20 "$scratch/build.log"; fail "ServerTrust without its trait did not say why"; }
echo "check-fresh-package: ServerTrust without its trait: $(grep -m1 -o "error: ServerTrust needs.*" "$scratch/build.log")"

for app in "$light" "$trust"; do
    (cd "$app" && "$SWIFT" package resolve >/dev/null 2>&1) || fail "$(basename "$app") does not resolve"
    fetched=$(ls "$app/.build/checkouts" | tr '\n' ' ')
    echo "check-fresh-package: $(basename "$app") fetched: $fetched"
    if [ "$app" = "$light" ] && [ "$fetched" != "swift-system " ]; then fail "traits: [] fetched more than swift-system: $fetched"; fi
    start=$(date +%s)
    (cd "$app" && "$SWIFT" build >"$scratch/build.log" 2>&1) || { grep -E "error|warning" "$scratch/build.log" | head -20; fail "$(basename "$app") does not build"; }
    echo "check-fresh-package: $(basename "$app") built in $(( $(date +%s) - start )) s, .build $(du -sm "$app/.build" | cut -f1) MB"
    [ -x "$app/.build/debug/$( [ "$app" = "$light" ] && echo uses-Reachability || echo my-app)" ] || fail "$(basename "$app") built nothing"
done

# Each product, run: with a daemon on a private socket of its own, and without one.
[ -x "$root/.build/debug/reachd" ] || (cd "$root" && "$SWIFT" build --product reachd >/dev/null)
"$root/.build/debug/reachd" --bus none --socket "$scratch/run/bus" --config /dev/null --log-level warning &
daemon=$!
for _ in $(seq 100); do [ -S "$scratch/run/bus" ] && break; sleep 0.1; done
bin=$light/.build/debug
"$bin/uses-Reachability" | tee "$scratch/out" && grep -q '^in process: ' "$scratch/out" || fail "Reachability did not run"
"$bin/uses-ReachabilityClient" "$scratch/run/bus" | tee "$scratch/out" && grep -q '^from reachd: ' "$scratch/out" || fail "ReachabilityClient did not run"
if "$bin/uses-ReachabilityClient" "$scratch/nobody/bus" >"$scratch/out"; then fail "ReachabilityClient found a daemon where none is"; fi
grep -q '(no daemon)' "$scratch/out" || fail "ReachabilityClient without a daemon: $(cat "$scratch/out")"
echo "$(cat "$scratch/out")"
"$bin/uses-ReachabilityCompat" "$scratch/run/bus" | tee "$scratch/out" && grep -q 'from daemon' "$scratch/out" || fail "ReachabilityCompat did not run"
"$trust/.build/debug/my-app" "$scratch/trust.toml" | tee "$scratch/out" && grep -q '^ServerTrust: ' "$scratch/out" || fail "ServerTrust did not run"
echo "check-fresh-package: each product builds and runs from the docs' manifest"
