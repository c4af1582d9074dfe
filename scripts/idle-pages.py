#!/usr/bin/python3
"""Which pages of its binary a running process holds, per ELF section, and in .rodata by
kind of symbol: the idle-page accounting of BENCHMARKS.md §22.

    scripts/idle-pages.py PID BINARY [--symbols UNSTRIPPED]

BINARY is the file the process runs (its sections); UNSTRIPPED, a copy with the symbol
table and the same layout (`install -s` and dh_strip move no section), names what the
resident .rodata holds. Reads /proc/PID/pagemap: run it as root or as the process's user.
A page is resident when the process's page tables map it (what RSS counts), anonymous
when it was written (relocated at load, or data the program wrote)."""
import collections
import re
import struct
import subprocess
import sys

PAGE = 4096


def sections(binary):
    """(name, address, size) of each allocated section."""
    found = []
    listing = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if match and int(match.group(2), 16):
            found.append((match.group(1), int(match.group(2), 16), int(match.group(3), 16)))
    return found


def load_base(pid, binary):
    """Where the kernel mapped the binary: its lowest mapping less that mapping's file offset."""
    target = subprocess.run(["readlink", "-f", f"/proc/{pid}/exe"], capture_output=True, text=True).stdout.strip()
    bases = []
    for line in open(f"/proc/{pid}/maps"):
        fields = line.split()
        if len(fields) > 5 and fields[5] == target:
            bases.append(int(fields[0].split("-")[0], 16) - int(fields[2], 16))
    if not bases:
        sys.exit(f"idle-pages: {binary} is not mapped by process {pid}")
    return min(bases)


class PageMap:
    def __init__(self, pid):
        self.file = open(f"/proc/{pid}/pagemap", "rb")

    def state(self, page):
        """(resident, anonymous) of the page at this page number."""
        self.file.seek(page * 8)
        entry = struct.unpack("<Q", self.file.read(8))[0]
        resident = bool(entry >> 63 & 1)
        return resident, resident and not entry >> 61 & 1


def kind(name):
    """A Swift symbol's kind is its mangling's suffix (Mc: a conformance descriptor, Mn: a
    type descriptor, Tq: a method descriptor, …); a C symbol, its name without numbers."""
    if name.startswith("$s"):
        suffix = re.search(r"([A-Za-z]{2})$", name)
        return "Swift " + (suffix.group(1) if suffix else "?")
    return "C " + re.sub(r"[0-9]+", "N", name)[:34]


def main():
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 5 and sys.argv[3] != "--symbols"):
        sys.exit(__doc__.split("\n\n")[1])
    pid, binary = int(sys.argv[1]), sys.argv[2]
    symbols = sys.argv[4] if len(sys.argv) == 5 else binary
    base = load_base(pid, binary)
    pages = PageMap(pid)
    print(f"{'section':30s} {'size KiB':>9s} {'resident KiB':>13s} {'anonymous KiB':>14s}")
    totals = [0, 0]
    rodata = None
    for name, address, size in sections(binary):
        first, last = (base + address) // PAGE, (base + address + size - 1) // PAGE
        states = [pages.state(page) for page in range(first, last + 1)]
        resident = sum(1 for s in states if s[0]) * 4
        anonymous = sum(1 for s in states if s[1]) * 4
        if resident:
            print(f"{name:30s} {size // 1024:9d} {resident:13d} {anonymous:14d}")
        totals[0] += resident
        totals[1] += anonymous
        if name == ".rodata":
            rodata = (address, size)
    print(f"{'all (a shared page twice)':30s} {'':9s} {totals[0]:13d} {totals[1]:14d}")
    if rodata is None:
        return
    listing = subprocess.run(["nm", "-S", symbols], capture_output=True, text=True).stdout.splitlines()
    held, whole = collections.Counter(), collections.Counter()
    for line in listing:
        fields = line.split()
        if len(fields) != 4:
            continue
        address, size = int(fields[0], 16), int(fields[1], 16)
        if not rodata[0] <= address < rodata[0] + rodata[1]:
            continue
        first, last = (base + address) // PAGE, (base + address + max(size, 1) - 1) // PAGE
        whole[kind(fields[3])] += size
        if any(pages.state(page)[0] for page in range(first, last + 1)):
            held[kind(fields[3])] += size
    if not whole:
        print("\n.rodata by kind: no symbol table (--symbols names an unstripped copy)")
        return
    print(f"\n.rodata by kind: KiB on resident pages / KiB in all (largest 15)")
    for name, size in whole.most_common(15):
        print(f"  {name:36s} {held[name] // 1024:6d} / {size // 1024:6d}")


main()
