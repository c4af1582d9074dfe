#!/bin/bash
# wake-timeline.sh — where the first wake-up after a change spends its time, between
# system calls, beside `ip monitor`'s (BENCHMARKS.md §34).
#
#   scripts/wake-timeline.sh [N] [PROGRAM [ARGUMENT...]]
#
# PROGRAM (default: .build/release/reachctl watch --json --direct) and `ip monitor` run
# in a namespace of their own with an uplink and a default route; the default route is
# deleted and restored N times (default 30), 50 ms apart, under `perf record` (the
# scheduler's wake-ups and switches; the entries to and exits from poll, ppoll,
# epoll_wait, epoll_pwait, recvfrom, recvmsg, sendmsg and write). Printed, as medians
# in µs: when each program was woken and first ran after the deletion, and its
# wake-up's steps from one system call to the next — for PROGRAM its first wake-up and
# the one after it (reachd's and reachctl's re-check, 0.25 ms later, on caches the
# first one warmed). The time between two calls is the program's own code; the time
# inside one, the kernel's.
# With WAKE_TIMELINE_SUBSCRIBER set to a command (a client of a daemon PROGRAM, such as
# `reachctl watch --json --bus SOCKET`), it is started in the namespace after PROGRAM,
# and when it was woken and wrote its line are printed too: PROGRAM's first `sendmsg`
# after its lookups is then the signal it sent.
# With WAKE_TIMELINE_BATCH set, one `ip -batch` process makes every change, as the
# benchmarks make theirs from one socket: no process is started between two changes
# (BENCHMARKS.md §41).
# With WAKE_TIMELINE_PROBES set to LABEL=PATTERN pairs (space-separated; PATTERN an extended
# regular expression over PROGRAM's mangled function names, as nm gives them, that matches
# exactly one, like wake-footprint.sh's FROM), each function's entry is a step of its own,
# `<LABEL>`, between the system calls: where the program's own code goes (BENCHMARKS.md
# §42). Each entry costs a uprobe's trap, 3–5 µs here: compare steps with each other, not
# the sums with a run without probes.
# Each wake-up's wait for a CPU is printed apart, with how many found the CPU they were
# put on idle (a halted vCPU woken first) rather than busy (queued behind what ran there).
# Run as root: it makes two network namespaces, and removes them. x86-64 only (the
# system calls' numbers).
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "wake-timeline.sh: needs root (network namespaces, perf)" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || { echo "wake-timeline.sh: x86-64 only" >&2; exit 1; }
command -v perf > /dev/null || apt-get install -y --no-install-recommends linux-perf
cd "$(dirname "$0")/.."
changes=${1:-30}
shift || true
[ $# -gt 0 ] || set -- .build/release/reachctl watch --json --direct
work=$(mktemp -d)
host=rd-timeline-$$-host
peer=rd-timeline-$$-peer
probes=wake_timeline_$$
cleanup() {
    kill ${program:-} ${monitor:-} ${subscriber:-} 2> /dev/null || true
    [ -z "${WAKE_TIMELINE_PROBES:-}" ] || perf probe -q -d "$probes:*" 2> /dev/null || true
    ip netns del "$host" 2> /dev/null || true
    ip netns del "$peer" 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

. scripts/uplink-namespaces.sh
make_uplink_namespaces "$host" "$peer"

# `ip netns exec` execs the program: the pids are theirs.
ip netns exec "$host" "$@" > /dev/null 2> "$work/program.log" &
program=$!
ip netns exec "$host" ip monitor route link address > /dev/null &
monitor=$!
sleep 2 # both subscribed, the program's first path printed
kill -0 "$program" 2> /dev/null || { echo "wake-timeline.sh: $1 exited:" >&2; cat "$work/program.log" >&2; exit 1; }
subscriber_threads=""
if [ -n "${WAKE_TIMELINE_SUBSCRIBER:-}" ]; then
    # Word-split on purpose: a command and its arguments.
    # shellcheck disable=SC2086
    ip netns exec "$host" $WAKE_TIMELINE_SUBSCRIBER > /dev/null 2> "$work/subscriber.log" &
    subscriber=$!
    sleep 1 # connected, the current path printed
    kill -0 "$subscriber" 2> /dev/null || { echo "wake-timeline.sh: the subscriber exited:" >&2; cat "$work/subscriber.log" >&2; exit 1; }
    subscriber_threads=$(ls "/proc/$subscriber/task" | tr '\n' ' ')
fi
if [ -n "${WAKE_TIMELINE_BATCH:-}" ]; then
    # One `ip -batch` process makes every change, as the benchmarks make them from one socket:
    # no process starts between two changes (python3 paces them, sleeping in-process).
    cat > "$work/changes" << EOF
/usr/bin/python3 -c 'import time
for _ in range($changes):
    for verb in ("del", "add"):
        print("route", verb, "default via 10.1.0.1", flush=True)
        time.sleep(0.05)' | ip -n $host -batch -
EOF
else
    echo "for i in \$(seq $changes); do ip -n $host route del default via 10.1.0.1; sleep 0.05; ip -n $host route add default via 10.1.0.1; sleep 0.05; done" > "$work/changes"
fi
probe_events=()
if [ -n "${WAKE_TIMELINE_PROBES:-}" ]; then
    binary=$(realpath "$(command -v "$1")")
    functions=$(nm "$binary" | awk '$2 ~ /^[Tt]$/ { print $3 }')
    for probe in $WAKE_TIMELINE_PROBES; do
        label=${probe%%=*} pattern=${probe#*=}
        function=$(printf '%s\n' "$functions" | grep -E -- "$pattern" || true)
        count=$(printf '%s' "$function" | grep -c . || true)
        [ "$count" = 1 ] || { echo "wake-timeline.sh: $pattern matches $count functions of $binary" >&2; exit 1; }
        perf probe -q -x "$binary" -a "$probes:$label=$function" || { echo "wake-timeline.sh: perf probe cannot place $label at $function" >&2; exit 1; }
    done
    probe_events=(-e "$probes:*")
fi
calls='id == 1 || id == 7 || id == 45 || id == 46 || id == 47 || id == 232 || id == 271 || id == 281'
perf record -q -a -m 4M -o "$work/perf.data" -e sched:sched_switch,sched:sched_wakeup \
    -e raw_syscalls:sys_enter --filter "$calls" --exclude-perf \
    -e raw_syscalls:sys_exit --filter "$calls" --exclude-perf "${probe_events[@]}" -- \
    bash "$work/changes"
threads=$(ls "/proc/$program/task" | tr '\n' ' ')
perf script -i "$work/perf.data" -F comm,tid,time,event,trace 2> /dev/null > "$work/trace"

/usr/bin/python3 - "$work/trace" "$monitor" "$threads" "$*" "$subscriber_threads" << 'EOF'
import re, statistics, sys
path, monitor, threads, command = sys.argv[1], int(sys.argv[2]), {int(t) for t in sys.argv[3].split()}, sys.argv[4]
subscriber = {int(t) for t in sys.argv[5].split()}
names = {'1': 'write', '7': 'poll', '45': 'recvfrom', '46': 'sendmsg', '47': 'recvmsg', '232': 'epoll_wait', '271': 'ppoll', '281': 'epoll_pwait'}
waits = ('poll', 'ppoll', 'epoll_wait', 'epoll_pwait')
events = []
for line in open(path):
    m = re.match(r'\s*(.+?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)', line)
    if m:
        comm, tid, time, event, detail = m.groups()
        events.append((float(time) * 1e6, comm.strip(), int(tid), event, detail))
# The changes: each `ip route` process's request (its sendmsg); deletions and restores alternate.
requests = [e[0] for e in events
            if e[1] == 'ip' and e[2] != monitor and e[3] == 'raw_syscalls:sys_enter' and e[4].startswith('NR 46 ')]
deletions = requests[0::2]
def calls_of(tids, start, end):
    out = []
    for time, _, tid, event, detail in events:
        if not (start <= time < end and tid in tids): continue
        if event.startswith('wake_timeline_'):
            out.append((time - start, 'exit', '<' + event.split(':')[1] + '>', tid))
        elif event.startswith('raw_syscalls'):
            number = re.match(r'NR (\d+)', detail).group(1)
            out.append((time - start, 'exit' if event.endswith('exit') else 'enter', names.get(number, number), tid))
    return out
def woken(tids, start, end):
    # The first wake-up after `start`: when, how long until the woken thread ran, and
    # whether its CPU was idle until then (a halted vCPU is woken first) or busy (it queued).
    for index, (time, _, _, event, detail) in enumerate(events):
        if time < start or time >= end or event != 'sched:sched_wakeup': continue
        m = re.search(r'pid=(\d+)', detail)
        if not m or int(m.group(1)) not in tids: continue
        for later, comm, _, kind, text in events[index + 1:]:
            if later >= end: break
            if kind == 'sched:sched_switch' and re.search(rf'next_pid={m.group(1)}\b', text):
                return time - start, (later - time, comm == 'swapper')
        return time - start, None
    return None, None
def wakes(calls):
    # A wake-up begins where a wait returns: poll, ppoll or epoll (PROGRAM), a blocking recvmsg (ip monitor).
    out, current = [], None
    for call in calls:
        if call[1] == 'exit' and (call[2] in waits or (call[2] == 'recvmsg' and not out)):
            current = [call]; out.append(current)
        elif current is not None:
            current.append(call)
    return out
def steps(wake):
    labels, ordinal = [], {}
    for (t1, k1, n1, _), (t2, k2, n2, _) in zip(wake, wake[1:]):
        inside = k1 == 'enter'
        label = f'in {n1}' if inside else f'{n1} → {n2}'
        ordinal[label] = ordinal.get(label, 0) + 1
        labels.append((f'{label} ({ordinal[label]})' if ordinal[label] > 1 or label.startswith('in ') else label, t2 - t1, inside))
    return labels
def table(title, per_change):
    print(title)
    order, values = [], {}
    for labels in per_change:
        for label, value, inside in labels:
            if label not in values: order.append((label, inside)); values[label] = []
            values[label].append(value)
    own = kernel = 0.0
    written = None
    for label, inside in order:
        if len(values[label]) < len(per_change) // 2: continue
        median = statistics.median(values[label])
        if inside: kernel += median
        else: own += median
        print(f'  {"the kernel" if inside else "its code":10}  {label:34} {median:7.1f}')
        if written is None and label.startswith('in write'): written = (own, kernel)
    if written: print(f'  to the line written: its code {written[0]:.1f} µs, the kernel {written[1]:.1f} µs (sums of medians)')
    print(f'  to the wait again:   its code {own:.1f} µs, the kernel {kernel:.1f} µs')
placements = {}
first, second, ip_wakes, timings = [], [], [], {'PROGRAM woken': [], 'PROGRAM runs': [], 'PROGRAM writes': [],
                                                  'ip monitor woken': [], 'ip monitor runs': [], 'ip monitor writes': [],
                                                  'the subscriber woken': [], 'the subscriber writes': []}
for start in deletions:
    end = start + 20_000
    mine = wakes(calls_of(threads, start, end))
    theirs = wakes(calls_of({monitor}, start, end))
    if not mine or not theirs: continue
    first.append(steps(mine[0]))
    if len(mine) > 1: second.append(steps(mine[1]))
    ip_wakes.append(steps(theirs[0]))
    for who, tids, wake in (('PROGRAM', threads, mine[0]), ('ip monitor', {monitor}, theirs[0])):
        when, placed = woken(tids, start, end)
        timings[f'{who} woken'].append(when)
        placements.setdefault(who, []).append(placed)
        timings[f'{who} runs'].append(wake[0][0])
        writes = [call[0] for call in wake if call[1] == 'enter' and call[2] == 'write']
        timings[f'{who} writes'].append(writes[0] if writes else None)
    if subscriber:
        when, placed = woken(subscriber, start, end)
        timings['the subscriber woken'].append(when)
        placements.setdefault('the subscriber', []).append(placed)
        writes = [call[0] for call in calls_of(subscriber, start, end) if call[1] == 'enter' and call[2] == 'write']
        timings['the subscriber writes'].append(writes[0] if writes else None)
if not first: sys.exit(f'wake-timeline.sh: no wake-up of {command} or of ip monitor found after the deletions')
print(f'{len(first)} route deletions; PROGRAM: {command}')
print('from the deletion request (µs, median):')
for key, values in timings.items():
    values = [v for v in values if v is not None]
    if values: print(f'  {key.replace("PROGRAM", "the program"):22} {statistics.median(values):7.1f}')
print('from the wake-up to a CPU (µs, median; the wake-ups that found their CPU idle, and theirs):')
for who, found in placements.items():
    found = [f for f in found if f is not None]
    idle = [delay for delay, was_idle in found if was_idle]
    if found:
        print(f'  {who.replace("PROGRAM", "the program"):22} {statistics.median(d for d, _ in found):7.1f}'
              f'   {len(idle)} of {len(found)} idle' + (f', {statistics.median(idle):.1f}' if idle else ''))
table('the program, first wake-up after the deletion (µs, median):', first)
if second: table('the program, its next wake-up (the re-check, caches warm):', second)
table('ip monitor, its wake-up (µs, median):', ip_wakes)
EOF
