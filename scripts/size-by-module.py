#!/usr/bin/python3
"""size-by-module.py BINARY... — where each (unstripped) binary's bytes come from.

Attributes every sized symbol (nm --size-sort) to a module: Swift symbols by
the module in their mangled name, C and C++ symbols by known prefixes (the two
BoringSSL copies, the Swift runtime, libdispatch, libnl). Prints one table row
per module (KiB of code and data) and the sections no symbol accounts for
(unwind tables, Swift metadata sections, dynamic symbol tables). Used for
BENCHMARKS.md's package-size table.
"""
import re
import subprocess
import sys
from collections import Counter

# Mangled Swift names: $s / _$s / $S, then the module: a length and a name
# (or "s" for the standard library, "So"/"SC" for imported C types).
SWIFT = re.compile(r"^_?\$[sS](\d+)([A-Za-z_][A-Za-z0-9_]*)")
STDLIB_SUBSTITUTIONS = ("$ss", "_$ss", "$sS", "$sSo", "$sSC")

PROJECT = {"reachd", "reachctl", "reachd_trust", "ReachabilityCore", "Reachability", "ReachabilityBus", "SDBus", "ReachabilityContract", "ReachabilityClient",
           "Netlink", "TOML", "ServerTrust", "DaemonDecisions", "ReachdMetrics", "ReachctlSupport", "TrustCommands",
           "TrustHelperMessages", "ProgramSupport", "ReachdProgram", "ReachctlProgram", "ReachdTrustProgram",
           "SystemCalls", "HTTPWire", "TrustVocabulary", "NetworkManagerSurface", "reachd_multicall"}
GROUPS = [
    ("BoringSSL (swift-crypto)", lambda n: "CCryptoBoringSSL" in n),
    ("BoringSSL (swift-nio-ssl)", lambda n: "CNIOBoringSSL" in n),
    ("libdispatch", lambda n: n.startswith(("dispatch_", "_dispatch", "DISPATCH", "_os_object", "_Block", "Block_"))),
    ("libnl", lambda n: n.startswith(("nl_", "rtnl_", "nla_", "nlmsg_", "__nl", "genl_"))),
]


def module_of(name):
    for group, test in GROUPS:
        if test(name):
            return group
    match = SWIFT.match(name)
    if match:
        length, rest = int(match.group(1)), match.group(2)
        module = rest[:length]
        if module in PROJECT:
            return "this project"
        if module.startswith(("NIO", "CNIO", "_NIO")):
            return "swift-nio, swift-nio-ssl"
        if module in ("X509", "_CertificateInternals"):
            return "swift-certificates"
        if module in ("Crypto", "_CryptoExtras", "CryptoExtras", "CryptoBoringWrapper", "CCryptoBoringSSLShims"):
            return "swift-crypto"
        if module == "SwiftASN1":
            return "swift-asn1"
        if module.startswith("ArgumentParser"):
            return "swift-argument-parser"
        if module.startswith(("Foundation", "_Foundation")):
            return "FoundationEssentials"
        if module in ("Dispatch",):
            return "libdispatch"
        if module in ("DequeModule", "InternalCollectionsUtilities"):
            return "swift-collections"
        if module in ("Synchronization", "_Concurrency", "_StringProcessing", "RegexBuilder", "Atomics", "_RegexParser"):
            return "Swift runtime and standard library"
        return module
    if name.startswith(STDLIB_SUBSTITUTIONS) or name.startswith(("swift_", "_swift", "$s", "_$s", "__swift", "_ZN5swift", "_ZNK5swift")):
        return "Swift runtime and standard library"
    if name.startswith(("_ZN", "_ZNK", "_ZT", "__cxa", "_ZS", "_ZdlPv", "_Znwm")):
        return "C++ (runtime's, libstdc++)"
    return "other C"


def measure(binary):
    output = subprocess.run(["nm", "--size-sort", "-S", binary], capture_output=True, text=True, check=True).stdout
    sizes = Counter()
    for line in output.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        size, kind, name = int(parts[1], 16), parts[2], parts[3]
        if kind in "bB":  # zero-filled at run time: costs no file bytes
            continue
        sizes[module_of(name)] += size
    sections = {}
    for line in subprocess.run(["size", "-A", binary], capture_output=True, text=True, check=True).stdout.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            sections[parts[0]] = int(parts[1])
    return sizes, sections


def main():
    binaries = sys.argv[1:]
    measured = [measure(binary) for binary in binaries]
    modules = sorted({module for sizes, _ in measured for module in sizes}, key=lambda m: -sum(s[m] for s, _ in measured))
    print("| module (KiB) | " + " | ".join(b.split("/")[-1] for b in binaries) + " |")
    print("|---|" + "---|" * len(binaries))
    for module in modules:
        if all(sizes[module] < 8 * 1024 for sizes, _ in measured):
            continue
        print(f"| {module} | " + " | ".join(f"{sizes[module] / 1024:,.0f}" for sizes, _ in measured) + " |")
    for section in ("eh_frame", "eh_frame_hdr", "dynsym+dynstr", "swift5 metadata"):
        def size(sections):
            if section == "dynsym+dynstr":
                return sections.get(".dynsym", 0) + sections.get(".dynstr", 0) + sections.get(".gnu.hash", 0)
            if section == "swift5 metadata":
                return sum(v for k, v in sections.items() if k.startswith("swift5_"))
            return sections.get("." + section, 0)
        print(f"| section {section} | " + " | ".join(f"{size(sections) / 1024:,.0f}" for _, sections in measured) + " |")


if __name__ == "__main__":
    main()
