#!/bin/bash
# wake-footprint.sh — what `reachctl watch --direct` touches from the kernel's message to
# its line, by region: the distinct 64-byte lines of code and of data (BENCHMARKS.md §40).
#
#   scripts/wake-footprint.sh [N] [REACHCTL]
#
# REACHCTL (default: .build/release/reachctl) runs under valgrind's lackey, which
# traces every instruction and memory access, in a namespace of its own with an
# uplink and a default route; the default route is deleted and restored N times
# (default 3), 5 s apart. Printed for each window from `PathWatcher.readable()` to
# the line's `write(utf8Line:to:)` (all threads): instructions, lines of code and
# of data, and the data's lines by mapping, named with its start: the binary's own
# (runtime metadata, witness tables, globals), each library's, and the anonymous
# ones (the monitor thread's stack, malloc's arenas, the binary's .bss). One window
# per change, each deletion's, then its restoration's; the first also holds what runs
# once only (metadata made on first use). A wake-up on cold caches pays for the
# scattered lines it touches, code and static data one dependent miss after another
# (the stack, one stretch, costs little): fewer of them per change is what makes it
# faster (§40). Run as root (network namespaces) after `make release`; the
# binary is copied without its debug information, as the package ships it.
#
# For release/wake-lines.sh, three variables: CHANGES, the kinds of change made in
# turn (default "route"; also "address", the uplink's address deleted and added
# again, and "link", the uplink set down and up); FROM, the function a window starts
# at (default readable()); LINES, a file to which the lines of the program's own code
# and data each window but the first touched are added, a line a window, each line's
# address in the file (as nm gives them) in hex.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "wake-footprint.sh: needs root (network namespaces)" >&2; exit 1; }
command -v valgrind > /dev/null || apt-get install -y --no-install-recommends valgrind
cd "$(dirname "$0")/.."
changes=${1:-3}
binary=${2:-.build/release/reachctl}
[ -x "$binary" ] || { echo "wake-footprint.sh: no $binary (make release first)" >&2; exit 1; }
work=$(mktemp -d)
host=rd-footprint-$$-host
peer=rd-footprint-$$-peer
cleanup() {
    kill ${program:-} 2> /dev/null || true
    ip netns del "$host" 2> /dev/null || true
    ip netns del "$peer" 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

strip --strip-debug "$binary" -o "$work/reachctl"
# valgrind loads a position-independent executable at this address.
base=0x108000
symbol() { nm "$work/reachctl" | awk -v name="$1" '!found && $3 ~ name { print $1; found = 1 }'; }
start=$(symbol "${FROM:-PathWatcherC8readableyyF\$}")
end=$(symbol '5write8utf8Line')
[ -n "$start" ] && [ -n "$end" ] || { echo "wake-footprint.sh: ${FROM:-readable()} or write(utf8Line:to:) not found" >&2; exit 1; }

. scripts/uplink-namespaces.sh
make_uplink_namespaces "$host" "$peer"

mkfifo "$work/trace"
ip netns exec "$host" valgrind --tool=lackey --trace-mem=yes --log-file="$work/trace" \
    "$work/reachctl" watch --json --direct > /dev/null 2> "$work/program.log" &
program=$!
/usr/bin/python3 - "$work/trace" "$((0x$start + base))" "$((0x$end + base))" "$program" "$base" "${LINES:-}" > "$work/windows" << 'EOF' &
import collections, sys
trace, start, end, pid, base, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5], 0), sys.argv[6]
windows = 0


def mappings():
    """The program's mappings: lackey's own process holds them where the program sees them."""
    for fields in (line.split() for line in open(f"/proc/{pid}/maps")):
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        yield low, high, fields[5].rsplit("/", 1)[-1] if len(fields) > 5 else "anonymous"


recording = False
for line in open(trace):
    if line.startswith("I  "):
        address = int(line[3:].split(",")[0], 16)
        if address == start and not recording:
            recording, instructions, code, data = True, 0, set(), set()
        if recording:
            instructions += 1
            code.add(address >> 6)
            if address == end:
                recording = False
                maps = list(mappings())
                regions = collections.Counter(
                    next((f"{name} {low:x}" for low, high, name in maps if low <= touched << 6 < high), "?") for touched in data)
                print(f"{instructions} instructions, {len(code)} lines of code, {len(data)} of data:",
                      ", ".join(f"{region} {count}" for region, count in regions.most_common(8)), flush=True)
                windows += 1
                if lines and windows > 1:  # the first also holds what runs once only
                    program = [(low, high) for low, high, name in maps if name == "reachctl"]
                    own = sorted(touched for touched in code | data if any(low <= touched << 6 < high for low, high in program))
                    with open(lines, "a") as out:
                        out.write(" ".join(f"{(touched << 6) - base:x}" for touched in own) + "\n")
    elif recording and line[:2] in (" L", " S", " M"):
        data.add(int(line[3:].split(",")[0], 16) >> 6)
EOF
reader=$!
sleep 40 # valgrind's start, the first path
kill -0 "$program" 2> /dev/null || { echo "wake-footprint.sh: reachctl exited:" >&2; cat "$work/program.log" >&2; exit 1; }
for _ in $(seq "$changes"); do
    for change in ${CHANGES:-route}; do
        case $change in
        route) ip -n "$host" route del default via 10.1.0.1 ;;
        address) ip -n "$host" addr del 10.1.0.2/24 dev eth0 ;;
        link) ip -n "$host" link set eth0 down ;;
        *) echo "wake-footprint.sh: no change named $change" >&2; exit 1 ;;
        esac
        sleep 5
        [ "$change" = route ] || ip -n "$host" link set eth0 up
        [ "$change" = address ] && ip -n "$host" addr add 10.1.0.2/24 dev eth0
        sleep 1 # the carrier
        ip -n "$host" route replace default via 10.1.0.1
        sleep 5
    done
done
kill "$program"
wait "$reader" || true
cat "$work/windows"
