#!/usr/bin/python3
"""check-doc-examples.py FILE... — the Swift in documentation is code that compiles.

Every ```swift block of each FILE (the README's tour, the DocC articles) must be
an excerpt of one program of Examples/, which `make examples` builds: its
lines, blank ones aside, appear in that program in the same order (lines in
between may be left out). Fails naming the block that is not.
"""
import glob
import re
import sys

programs = {path: [line.rstrip() for line in open(path)] for path in glob.glob("Examples/Sources/*/*.swift")}


def excerpt_of(block, program):
    position = 0
    for line in block:
        try:
            position = program.index(line, position) + 1
        except ValueError:
            return False
    return True


failures = 0
for document in sys.argv[1:]:
    text = open(document).read()
    for match in re.finditer(r"^```swift\n(.*?)^```", text, re.S | re.M):
        block = [line.rstrip() for line in match.group(1).splitlines() if line.strip()]
        line = text.count("\n", 0, match.start()) + 1
        homes = [path for path, program in programs.items() if excerpt_of(block, program)]
        if not homes:
            failures += 1
            print(f"{document}:{line}: this Swift block is not an excerpt of any program in Examples/")
        else:
            print(f"{document}:{line}: from {homes[0]}")
sys.exit(1 if failures else 0)
