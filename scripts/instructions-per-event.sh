#!/bin/bash
# instructions-per-event.sh — what one kernel event costs a program, in instructions
# (callgrind), counted from after its start-up until the last event was handled
# (BENCHMARKS.md §22 and §23).
#
#   scripts/instructions-per-event.sh changes N [BINARY]
#       N deletions and re-additions of the default route, 50 ms apart, with one
#       `reachctl watch --json` (.build/release/reachctl) on reachd's private socket:
#       instructions per change.
#   scripts/instructions-per-event.sh pods INTERFACES N [BINARY]
#       INTERFACES interfaces (pod veths on bridges), then N pods made and the oldest
#       deleted, one every 0.1 s: instructions per pod.
#
# BINARY: reachd (default: .build/release/reachd, built by `make bench`) or `ip` (`ip
# monitor` by the same method). valgrind 3.19 cannot read Swift 6.3's DWARF: a copy
# with it stripped (symbols kept) is what runs. Prints the total and per event, and
# leaves callgrind's file in the current directory for `callgrind_annotate`. Only
# one program may run under callgrind meanwhile (callgrind_control addresses them
# all). Run as root: it makes a network namespace, and removes it.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "instructions-per-event.sh: needs root (a network namespace)" >&2; exit 1; }
command -v valgrind > /dev/null || apt-get install -y --no-install-recommends valgrind
here=$PWD
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in
changes) events=${2:?N}; interfaces=0; binary=${3:-.build/release/reachd} ;;
pods) interfaces=${2:?INTERFACES}; events=${3:?N}; binary=${4:-.build/release/reachd} ;;
*) sed -n '5,13p' "$0" >&2; exit 2 ;;
esac
reachctl=.build/release/reachctl
work=$(mktemp -d)
ns=reachd-instructions-$$
cleanup() {
    pkill -f "callgrind-out-file=$work/" 2> /dev/null || true
    pkill -f "watch --json --bus $work/bus" 2> /dev/null || true
    ip netns del "$ns" 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$ns"
ip -n "$ns" link set lo up
pairs=$((interfaces / 2))
bridges=$(((pairs + 999) / 1000))
{
    for b in $(seq 0 $((bridges - 1))); do
        echo "link add name cni$b type bridge"
        echo "addr add 10.$((88 + b)).0.1/16 dev cni$b"
        echo "link set dev cni$b up"
    done
    for p in $(seq 0 $((pairs - 1))); do
        echo "link add name h$p type veth peer name p$p"
        echo "link set dev h$p up"
        echo "link set dev p$p up"
        echo "link set dev h$p master cni$((p % bridges))"
    done
    echo "link add eth0 type veth peer name up0"
    echo "addr add 10.1.0.2/24 dev eth0"
    echo "link set eth0 up"
    echo "link set up0 up"
    echo "route add default via 10.1.0.1"
} | ip -n "$ns" -batch -
sleep $((3 + interfaces / 1000))

out=$work/callgrind.out
if [ "$(basename "$binary")" = ip ]; then
    ip netns exec "$ns" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
        ip monitor > /dev/null 2> "$work/log" &
else
    strip --strip-debug "$binary" -o "$work/reachd"
    touch "$work/reachd.toml"
    ip netns exec "$ns" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
        "$work/reachd" --bus none --socket "$work/bus" --config "$work/reachd.toml" > "$work/log" 2>&1 &
    if [ "$mode" = changes ]; then
        sleep 20 # start-up under valgrind, the first dump and path
        ip netns exec "$ns" "$reachctl" watch --json --bus "$work/bus" > "$work/watch" &
    fi
fi
sleep 25 # start-up under valgrind
if [ "$mode" = changes ] && [ "$(basename "$binary")" != ip ] && ! [ -s "$work/watch" ]; then
    echo "instructions-per-event.sh: $reachctl watch is not following reachd (make bench builds both)" >&2
    exit 1
fi
callgrind_control -i on > /dev/null 2>&1
if [ "$mode" = changes ]; then
    for _ in $(seq "$events"); do
        ip -n "$ns" route del default
        sleep 0.05
        ip -n "$ns" route add default via 10.1.0.1
        sleep 0.05
    done
    per=$((2 * events))
else
    for s in $(seq 0 $((events - 1))); do
        p=$((pairs + s))
        echo "link add name h$p type veth peer name p$p"
        echo "link set dev h$p up"
        echo "link set dev p$p up"
        echo "link set dev h$p master cni$((p % bridges))"
        echo "link del dev h$s"
    done | while read -r line; do
        echo "$line"
        case "$line" in "link del"*) sleep 0.1 ;; esac
    done | ip -n "$ns" -batch -
    per=$events
fi
sleep 15 # the last events handled, under valgrind
callgrind_control -i off > /dev/null 2>&1
callgrind_control -d > /dev/null 2>&1
sleep 2
kept=$here/$(basename "$binary")-$mode-$$.callgrind
cp "$out.1" "$kept"
total=$(callgrind_annotate "$kept" 2> /dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 } END { print total }')
echo "$(basename "$binary") $mode: $total instructions for $per events: $((total / per)) per event ($kept)"
