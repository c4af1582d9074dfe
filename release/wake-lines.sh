#!/bin/bash
# wake-lines.sh — regenerate release/wake-lines.txt, the lines of code and static
# data a change's wake-up touches, which the release link writes into the programs
# (release/wake-lines.py write; docs/development.md, "The wake-up's lines").
#
#   release/wake-lines.sh [BINARY]
#
# BINARY (default .build/release/reachctl, which `make bench` builds; or
# .build/release/reachd-multicall, which `make release` builds) runs as `reachctl watch
# --json --direct` under valgrind's lackey (scripts/wake-footprint.sh), with its table
# emptied, while the default route, the uplink's address and its link are each taken
# away and given back twice. The lines of the program's own code and data touched from
# the wake-up's loads to the line written, in every wake-up but the first (which also
# runs what runs once only), that at least half of them touched, are each named by its
# symbol and offset (wake-lines.py name). Run as root (network namespaces); commit the
# result. A stale list only costs wake-up time: a line whose symbol is gone or shorter
# is left out when written.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "wake-lines.sh: needs root (network namespaces)" >&2; exit 1; }
cd "$(dirname "$0")/.."
binary=${1:-.build/release/reachctl}
[ -x "$binary" ] || { echo "wake-lines.sh: no $binary (make release first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$binary" "$work/traced"
/usr/bin/python3 release/wake-lines.py write "$work/traced" /dev/null 2> /dev/null
CHANGES="route address link" FROM='^reachd_touch_wake_lines$' LINES="$work/windows" \
    scripts/wake-footprint.sh 2 "$work/traced"
/usr/bin/python3 release/wake-lines.py name "$binary" "$work/windows" > release/wake-lines.txt
echo "wake-lines.sh: $(wc -l < "$work/windows") wake-ups; $(awk -F '\t' '{ lines += split($2, offsets, " ") } END { print lines }' release/wake-lines.txt) lines, in $(wc -l < release/wake-lines.txt) symbols"
