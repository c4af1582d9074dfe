#!/usr/bin/python3
"""wake-lines.py — the wake-up's lines, named, and written into a program.

    wake-lines.py name BINARY WINDOWS > release/wake-lines.txt
    wake-lines.py write BINARY [LIST]

A change's wake-up runs on cold caches and fetches its code and the runtime's
metadata one dependent miss after another; CWakeLines loads the lines it will touch
all at once first (docs/development.md, "The wake-up's lines").

`name`: WINDOWS, from release/wake-lines.sh, holds a line per wake-up traced in
BINARY, the addresses of the lines it touched in hex (as nm gives them). The lines at
least half the wake-ups touched are kept (what every change runs, and most of what
each kind of change runs, without loading for every change what only one kind
touches), each named by a symbol of BINARY and an offset into it, so that the list
outlives the build it was traced in: a symbol, a tab, then its offsets in hex, a
line each. A line in no symbol of a name of its own (the PLT, the GOT, a string) has
nothing to be found by in another build, and is left out.

`write` finds each named line in BINARY (a release link, with its symbols: before it
is stripped) and writes their addresses into its table (the section
.reachd_wake_lines), in place: nothing in the file moves. A line whose symbol is
gone, whose offset is past its symbol's end, or that the program does not map, is
left out (the list is stale: that code changed since it was traced); a list of which
no line is left stops the build. LIST defaults to release/wake-lines.txt beside this
script.
"""
import bisect
import collections
import os
import struct
import subprocess
import sys

TABLE = ".reachd_wake_lines"
MAGIC = 0x6B776472
LINE = 64


def lines_of(*command):
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()


def symbols(binary):
    """Symbols with a size, by name, for the names only one symbol has."""
    named = collections.defaultdict(list)
    for line in lines_of("nm", "-S", "--defined-only", binary):
        fields = line.split(maxsplit=3)
        if len(fields) == 4 and int(fields[1], 16) > 0:
            named[fields[3]].append((int(fields[0], 16), int(fields[1], 16)))
    return {name: places[0] for name, places in named.items() if len(places) == 1}


def table_in(binary):
    """The table's section: its file offset and size, or None."""
    for line in lines_of("readelf", "-SW", binary):
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[1] == TABLE:
            return int(fields[4], 16), int(fields[5], 16)
    return None


def loads(binary):
    """What the program maps: each PT_LOAD's addresses."""
    spans = []
    for fields in (line.split() for line in lines_of("readelf", "-lW", binary)):
        if fields[:1] == ["LOAD"]:
            address, size = int(fields[2], 16), int(fields[5], 16)
            spans.append((address, address + size))
    return spans


def name(binary, windows):
    touched = collections.Counter(address for window in open(windows) for address in set(window.split()))
    wakeups = sum(1 for _ in open(windows))
    by_name = symbols(binary)
    ordered = sorted((address, address + size, symbol) for symbol, (address, size) in by_name.items())
    starts = [span[0] for span in ordered]
    offsets = collections.defaultdict(set)
    for line in sorted(int(address, 16) for address, count in touched.items() if 2 * count >= wakeups):
        # The last symbol that begins before the line ends: it, or one a little before, holds the line's
        # start; failing that, it begins inside the line (after padding). A line in no symbol of a name
        # of its own (the PLT, the GOT, a string) has nothing to be found by in another build: left out.
        last = bisect.bisect_right(starts, line + LINE - 1) - 1
        holding = [span for span in ordered[max(0, last - 32):last + 1] if span[0] <= line < span[1]]
        inside = min(holding, key=lambda span: span[1] - span[0], default=None)
        if inside is None and last >= 0 and line < ordered[last][0]:
            inside = ordered[last]
        if inside is not None:
            offsets[inside[2]].add(line - inside[0])
    for symbol in sorted(offsets):
        print(symbol, " ".join(f"{offset:x}" for offset in sorted(offsets[symbol])), sep="\t")


def write(binary, listing):
    by_name = symbols(binary)
    table = table_in(binary)
    if table is None:
        sys.exit(f"wake-lines.py: {binary} has no {TABLE} (a program linked without CWakeLines)")
    mapped = loads(binary)
    lines, stale = set(), 0
    for entry in open(listing):
        if not entry.strip():
            continue
        symbol, offsets = entry.rstrip("\n").split("\t")
        offsets = offsets.split()
        place = by_name.get(symbol)
        for offset in (int(text, 16) for text in offsets):
            if place is None or not -LINE < offset < place[1]:
                stale += 1
                continue
            address = (place[0] + offset) & ~(LINE - 1)
            if any(low <= address < high for low, high in mapped):
                lines.add(address)
            else:
                stale += 1
    file_offset, size = table
    capacity = size // 4 - 2
    chosen = sorted(lines)[:capacity]
    if stale and not chosen:
        sys.exit(f"wake-lines.py: no line of {listing} is in {binary}: regenerate it (release/wake-lines.sh)")
    with open(binary, "r+b") as program:
        program.seek(file_offset)
        if struct.unpack("<I", program.read(4))[0] != MAGIC:
            sys.exit(f"wake-lines.py: {binary}: {TABLE} does not begin with the table's magic word")
        program.write(struct.pack(f"<I{len(chosen)}I", len(chosen), *chosen))
    full = f", {len(lines) - len(chosen)} past the table's {capacity}" if len(lines) > capacity else ""
    print(f"wake-lines.py: {binary}: {len(chosen)} lines written, {stale} stale left out{full}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "name":
        name(sys.argv[2], sys.argv[3])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "wake-lines.txt"))
    else:
        sys.exit(__doc__.split("\n\n")[1])
