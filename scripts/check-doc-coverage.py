#!/usr/bin/python3
"""check-doc-coverage.py TARGET... — fails when a public symbol has no doc comment.

DocC's --warnings-as-errors catches broken links in what is documented, and
--experimental-documentation-coverage only counts; this is the check that every
public symbol of each TARGET (the symbol graph `swift package
generate-documentation` extracted under .build) has a doc comment. Exempt:
members the compiler synthesizes or a protocol's extension provides; a witness
without a comment of its own passes with the one the symbol graph inherits from
the protocol requirement it implements (DocC shows that one).
"""
import glob
import json
import os
import sys

missing = []
count = 0
for target in sys.argv[1:]:
    directories = sorted(glob.glob(f".build/*/extracted-symbols/*/{target}"), key=os.path.getmtime)
    if not directories:
        sys.exit(f"check-doc-coverage.py: no symbol graph of {target}: run swift package generate-documentation first")
    for path in sorted(glob.glob(f"{directories[-1]}/*.symbols.json")):
        graph = json.load(open(path))
        module = graph["module"]["name"]
        for symbol in graph["symbols"]:
            if symbol["accessLevel"] not in ("public", "open") or "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            count += 1
            comment = symbol.get("docComment")
            if comment and any(line["text"].strip() for line in comment["lines"]):
                continue
            location = symbol.get("location", {})
            where = location.get("uri", "").removeprefix("file://")
            line = location.get("position", {}).get("line", -1) + 1
            missing.append(f"{where}:{line}: {module}: {'.'.join(symbol['pathComponents'])} ({symbol['kind']['displayName']})")

for entry in missing:
    print(f"undocumented: {entry}")
print(f"doc coverage: {count - len(missing)} of {count} public symbols documented")
sys.exit(1 if missing or count == 0 else 0)
