#!/bin/bash
# symbol-order.sh — regenerate release/symbol-order.txt, the
# order in which the release link (release/release.mk, lld --symbol-ordering-file)
# lays out the functions the daemon and reachctl run.
#
# Why: the kernel maps a file's pages around every page fault (fault-around, and
# whole large folios), so a daemon whose few hundred KiB of running code is
# scattered over 16 MB of text gets most of that text counted as resident
# (BENCHMARKS.md §11). Laid out in the order they first run, reachd's functions
# share a few pages.
#
# How: valgrind's lackey traces every block reachd-multicall executes while
# reachd starts on a bus (a dbus-daemon of its own, as under systemd) and its
# private socket, reads resolved's servers (from a stand-in: no resolved here),
# idles, follows link, address and route changes, answers a WatchPath() and
# reachctl status, watch and route on both (and reachctl watch --direct follows the
# kernel), and stops; each block's address becomes the
# name of the function that holds it, in the order first run. Run natively, reachd
# also runs code valgrind never saw (dozens of pages of it, spread over the whole
# text): so reachd runs the same scenario again without valgrind, from a file
# system of its own whose device reads nothing ahead (a loop device,
# read_ahead_kb 0) and with a cold page cache, where the kernel maps exactly the
# pages reachd touches; /proc/PID/pagemap lists them, and every function on a
# touched page that holds none of the traced ones follows the traced functions.
# reachd's functions come first, then reachctl's.
#
# Before them all: the functions a change runs (what PathWatcher.readable and
# .timerFired call, in reachd and in `reachctl watch --direct`, traced by callgrind).
# A change's wake-up comes after seconds of idle, on cold caches: laid out in
# first-run order, the code of reachctl's first wake-up after a route deletion was
# spread among start-up's over 111 pages, a cold miss in the TLB for each; laid out
# this way, 68 (BENCHMARKS.md §36). A function in a section it shares with others
# (the standard library's 1.6 MB `.text`, not compiled with a section per
# function) cannot move alone, and listed there would drag its whole section in
# among them: those stay where they first run.
#
# Run as root (a network namespace, a loop device) after `make release`; commit the
# result. A stale file only costs memory and wake-up time: lld ignores names it no
# longer finds.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "symbol-order.sh: needs root (a network namespace)" >&2; exit 1; }
command -v valgrind > /dev/null || apt-get install -y --no-install-recommends valgrind
cd "$(dirname "$0")/.."
binary=.build/release/reachd-multicall
[ -x "$binary" ] || { echo "symbol-order.sh: run make release first" >&2; exit 1; }
work=$(mktemp -d)
ns=reachd-order-$$
device=""
cleanup() {
    ip netns del "$ns" 2> /dev/null || true
    umount "$work/cold" 2> /dev/null || true
    [ -z "$device" ] || losetup -d "$device"
    rm -rf "$work"
}
trap cleanup EXIT

# valgrind 3.19 cannot read the DWARF 5 the toolchain writes: trace a copy without
# it (same addresses; callgrind finds the functions it collects by their symbols).
strip --strip-debug -o "$work/reachd-multicall" "$binary"
# reachd-trust too: reachd starts it as it does once installed (Libexec: beside itself).
for name in reachd reachctl reachd-trust; do ln -s reachd-multicall "$work/$name"; done
: > "$work/reachd.toml"

ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add eth0 type veth peer name peer0
ip -n "$ns" link set peer0 up
ip -n "$ns" link set eth0 up
ip -n "$ns" address add 10.77.0.2/24 dev eth0
ip -n "$ns" route add default via 10.77.0.1

# The native run's file system: nothing read ahead, nothing cached.
truncate -s 128M "$work/cold.img"
mkfs.ext4 -q "$work/cold.img"
device=$(losetup --find --show "$work/cold.img")
echo 0 > "/sys/block/${device#/dev/}/queue/read_ahead_kb"
mkdir "$work/cold"
mount "$device" "$work/cold"
cp -a "$work/reachd-multicall" "$work/reachd" "$work/reachd-trust" "$work/cold/"
umount "$work/cold"
mount "$device" "$work/cold"

# touched-pages.py PID FILE: the file offsets of the pages of reachd-multicall's
# code that PID has mapped, one per line.
cat > "$work/touched-pages.py" <<'PY'
import struct, sys
pid, out = sys.argv[1], sys.argv[2]
with open(f"/proc/{pid}/pagemap", "rb") as pagemap, open(out, "w") as pages:
    for line in open(f"/proc/{pid}/maps"):
        fields = line.split()
        if len(fields) < 6 or fields[1] != "r-xp" or not fields[5].endswith("reachd-multicall"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        for address in range(low, high, 4096):
            pagemap.seek(address // 4096 * 8)
            if struct.unpack("Q", pagemap.read(8))[0] >> 63:
                print(address - low + int(fields[2], 16), file=pages)
PY

# resolved-stand-in.py ADDRESS: systemd-resolved is not on this machine, and reachd
# reads its servers over D-Bus wherever it runs (the package test's Debian has it):
# this serves resolved's Manager.DNS on the scenario's bus — a global and a
# per-link server, one more 8 s later with PropertiesChanged — so that the code
# reachd runs against the real one is traced and laid out with the rest.
cat > "$work/resolved-stand-in.py" <<'PY'
import sys
from gi.repository import Gio, GLib
node = Gio.DBusNodeInfo.new_for_xml('<node><interface name="org.freedesktop.resolve1.Manager">'
                                    '<property name="DNS" type="a(iiay)" access="read"/></interface></node>')
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
bus = Gio.DBusConnection.new_for_address_sync(sys.argv[1], flags, None, None)
servers = [(0, 2, [10, 77, 0, 1]), (2, 2, [10, 77, 0, 53])]
bus.register_object("/org/freedesktop/resolve1", node.interfaces[0], None,
                    lambda *_: GLib.Variant("a(iiay)", servers), None)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.resolve1", Gio.BusNameOwnerFlags.NONE, None, None)
def change():
    servers.append((2, 2, [10, 77, 0, 54]))
    bus.emit_signal(None, "/org/freedesktop/resolve1", "org.freedesktop.DBus.Properties", "PropertiesChanged",
                    GLib.Variant("(sa{sv}as)", ("org.freedesktop.resolve1.Manager", {}, ["DNS"])))
    return False
GLib.timeout_add_seconds(8, change)
GLib.MainLoop().run()
PY

# scenario DIRECTORY RUNNER [PAGES]: the programs in DIRECTORY, each run by RUNNER
# (valgrind, where @LOG@ becomes the program's name; or nothing), in the namespace
# and a mount namespace of its own, with an empty /run: reachd owns its name on a
# bus of its own and serves /run/reachd/bus, where reachctl looks when there is no
# system bus. With PAGES, only reachd runs, and the offsets of the code pages it
# touched are written there before it stops.
scenario() {
    ip netns exec "$ns" unshare --mount bash -euo pipefail -c '
    work=$1; bin=$2; read -ra runner <<< "$3"; pages=${4:-}
    mount -t tmpfs tmpfs /run
    bus=unix:path=/run/order-bus
    dbus-daemon --session --nofork --nopidfile --address=$bus &
    broker=$!
    # What runs in the background is started without run(), so that $! is the program.
    run() { local log=$1; shift; "${runner[@]/@LOG@/$log}" "$@"; }
    for _ in $(seq 50); do [ -S /run/order-bus ] && break; sleep 0.1; done
    /usr/bin/python3 "$work/resolved-stand-in.py" $bus &
    resolved=$!
    # As under systemd: readiness and watchdog notifications (to nobody), a short watchdog so idle pings are traced.
    NOTIFY_SOCKET=/run/order-notify WATCHDOG_USEC=1000000 \
        "${runner[@]/@LOG@/reachd}" "$bin/reachd" --config "$work/reachd.toml" --bus $bus --socket /run/reachd/bus 2> "$work/reachd.log" &
    daemon=$!
    for _ in $(seq 120); do [ -S /run/reachd/bus ] && break; sleep 0.5; done
    sleep 5
    change() { "$@"; sleep 2; }
    change ip route del default
    change ip route add default via 10.77.0.1
    change ip link set eth0 down
    change ip link set eth0 up
    change ip address del 10.77.0.2/24 dev eth0
    change ip address add 10.77.0.2/24 dev eth0
    change ip route add default via 10.77.0.1
    # A client watching a path restricted to wired interfaces, while the path changes.
    busctl --address=unix:path=/run/reachd/bus --timeout=20 call io.reachd.Reachability1 /io/reachd/Reachability1 \
        io.reachd.Reachability1 WatchPath ss "" wired > /dev/null
    if [ -z "$pages" ]; then
        run reachctl-status "$bin/reachctl" status > /dev/null
        run reachctl-json "$bin/reachctl" status --json > /dev/null
        run reachctl-route "$bin/reachctl" route 10.77.0.9 > /dev/null
        run reachctl-status-bus "$bin/reachctl" status --bus $bus > /dev/null
        timeout -s INT 25 "${runner[@]/@LOG@/reachctl-watch}" "$bin/reachctl" watch > /dev/null &
        watch=$!
        timeout -s INT 25 "${runner[@]/@LOG@/reachctl-direct}" "$bin/reachctl" watch --direct > /dev/null &
        direct=$!
        timeout -s INT 25 "${runner[@]/@LOG@/reachctl-direct-json}" "$bin/reachctl" watch --direct --json > /dev/null &
        json=$!
        sleep 15
        change ip route del default
        change ip route add default via 10.77.0.1
        wait $watch $direct $json || true
    else
        sleep 10
        python3 "$work/touched-pages.py" $daemon "$pages"
    fi
    kill -TERM $daemon
    wait $daemon || true
    kill $resolved $broker
' bash "$work" "$@"
}
scenario "$work" "valgrind --tool=lackey --trace-superblocks=yes --log-file=$work/@LOG@.lackey"
# What a change runs, from the kernel's message to the signal or the line.
collect='--toggle-collect=$s16ReachabilityCore11PathWatcherC8readableyyF --toggle-collect=$s16ReachabilityCore11PathWatcherC10timerFiredyyF'
scenario "$work" "valgrind --tool=callgrind --collect-atstart=no $collect --dump-instr=yes --log-file=$work/@LOG@.log --callgrind-out-file=$work/@LOG@.callgrind"
scenario "$work/cold" "" "$work/reachd.pages"

# The archives the release link takes besides the package's own objects.
archives=("$(dirname "$(readlink -f "$(command -v swift)")")"/../lib/swift_static/linux/*.a .build/static-c++/libstdc++.a)
python3 - "$binary" "$work" "${archives[@]}" > "$work/symbol-order.txt" <<'EOF'
import bisect, glob, re, subprocess, sys

binary, work, archives = sys.argv[1], sys.argv[2], sys.argv[3:]
# Function symbols by address; several names at one address are folded (--icf) copies.
names = {}
for line in subprocess.run(["nm", "-n", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        names.setdefault(int(parts[0], 16), []).append(parts[2])
starts = sorted(names)
text = next(l.split() for l in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True).stdout.splitlines() if " .text " in l)
index = text.index(".text")
low = int(text[index + 2], 16)
high = low + int(text[index + 4], 16)

entry = int(next(l.split()[-1] for l in subprocess.run(["readelf", "-h", binary], capture_output=True, text=True).stdout.splitlines() if "Entry point" in l), 16)
base = 0x108000
seen, order = set(), []


def add(start, leaving=frozenset()):
    if start not in seen:
        seen.add(start)
        order.extend(name for name in names[start] if name not in leaving)


def function_at(address):
    return starts[bisect.bisect_right(starts, address) - 1]


# Functions in a section of their own: the archives' functions in a plain `.text`
# share it with the rest of their object's.
shared = set()
for archive in archives:
    table = subprocess.run(["objdump", "-t", archive], capture_output=True, text=True, check=True).stdout
    shared.update(re.findall(r"^\S+ .* F \.text\t.* (\S+)$", table, re.MULTILINE))


def executed(profile):
    """The addresses in the binary a callgrind profile (--dump-instr=yes) saw run, in the profile's order."""
    objects, current, last, call = {}, None, 0, False
    for line in open(profile):
        if match := re.match(r"(c?ob)=\((\d+)\)(?: (.*))?$", line):
            kind, number, name = match.groups()
            objects.setdefault(number, name)
            if kind == "ob":
                current = objects[number]
        elif line.startswith("calls="):
            call = True
        elif line[0] in "0123456789+-*":
            position = line.split()[0]
            last = last if position == "*" else last + int(position, 0) if position[0] in "+-" else int(position, 0)
            # A call's line is its inclusive cost, also in the callers of what was collected.
            if current and current.endswith("/reachd-multicall") and not call:
                yield last
            call = False


def change_runs(*programs):
    """The functions that can move, in the order the programs' profiles first name them."""
    # callgrind gives addresses in the file, where lackey gives them where valgrind loaded it.
    functions = dict.fromkeys(function_at(address) for program in programs for address in executed(f"{work}/{program}.callgrind")
                              if low <= address < high)
    return [start for start in functions if not set(names[start]) <= shared]


# What both run first, then reachd's, then reachctl's: each program's together.
daemon = change_runs("reachd")
client = change_runs("reachctl-direct-json", "reachctl-direct")
both = set(daemon) & set(client)
for start in [start for start in daemon if start in both] + daemon + client:
    # Folded copies (--icf) of one function can be in both kinds of section: only its
    # names in sections of their own are listed (a local name is every object's).
    add(start, leaving=shared)
print(f"symbol-order.sh: {len(seen)} functions a change runs, first", file=sys.stderr)

logs = [f"{work}/reachd.lackey"] + sorted(glob.glob(f"{work}/reachctl-*.lackey"))
for log in logs:
    blocks = [int(line[3:], 16) for line in open(log) if line.startswith("SB ")]
    # valgrind loads a PIE at 0x108000 on amd64; the entry point's block proves it.
    if entry + base not in blocks:
        sys.exit(f"symbol-order.sh: {log}: the entry point is not at valgrind's usual base")
    for address in blocks:
        address -= base
        if low <= address < high:
            add(function_at(address))
    if log.endswith("/reachd.lackey"):
        # The pages reachd touched natively that hold none of the functions it
        # ran under valgrind: every function on them, in address order.
        traced_pages = {start // 4096 for start in seen}
        segment = next(l.split() for l in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True).stdout.splitlines()
                       if l.split()[:1] == ["LOAD"] and l.split()[6] == "R" and l.split()[7] == "E")
        offset_to_address = int(segment[2], 16) - int(segment[1], 16)
        untraced = sorted({(int(line) + offset_to_address) // 4096 for line in open(f"{work}/reachd.pages")} - traced_pages)
        for page in untraced:
            if low <= page * 4096 < high:
                add(function_at(page * 4096))
            for start in starts[bisect.bisect_left(starts, page * 4096):bisect.bisect_left(starts, (page + 1) * 4096)]:
                add(start)
        print(f"symbol-order.sh: {len(untraced)} pages reachd touched natively hold no function valgrind saw it run", file=sys.stderr)
# The runtime's first protocol-conformance lookup reads every conformance
# descriptor of the binary: together, they take a few pages instead of some in
# each of the 3 MB of .rodata.
conformances = [parts[2] for parts in map(str.split, subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines())
                if len(parts) == 3 and parts[1] in "dDrR" and parts[2].endswith("Mc")]
print("\n".join(order + sorted(conformances)))
EOF
mv "$work/symbol-order.txt" release/symbol-order.txt
echo "symbol-order.sh: $(wc -l < release/symbol-order.txt) symbols"
