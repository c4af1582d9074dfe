#!/usr/bin/python3
"""check-doc-snippets.py — every Swift snippet of the README, docs/ and DocC compiles, as written.

Each ```swift block of README.md, docs/*.md, the DocC articles (Sources/*/*.docc/*.md) and
the doc comments (/// ```swift in Sources/) is written into Examples/DocSnippets/ twice: as a
program's top-level code (one executable target per block), and as the body of an
`async throws` function (all blocks in one target). Examples/Package.swift turns each into
a target whose dependencies are the block's own imports, and the Examples package is built
in Swift 6 mode. `#sourceLocation` points every diagnostic at the document's own line.

A block stands alone: it imports what it uses and declares what it names, but for an
app's own functions (`resumeSync()`, `statusLabel`), which Examples/Sources/DocSnippetSupport
declares. Fails on any error, and on any warning in a block but an unused value (a
snippet may show a value without using it) — so `try await` that would call a blocking
overload ("no 'async' operations occur within 'await'") fails the build.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(root)
snippets_dir = "Examples/DocSnippets"


def blocks():
    documents = ["README.md"] + sorted(glob.glob("docs/*.md")) + sorted(glob.glob("Sources/*/*.docc/*.md"))
    for document in documents:
        text = open(document).read()
        for match in re.finditer(r"^```swift\n(.*?)^```", text, re.S | re.M):
            yield document, text.count("\n", 0, match.start()) + 2, match.group(1)
    for source in sorted(glob.glob("Sources/**/*.swift", recursive=True)):
        lines = open(source).read().split("\n")
        start = None
        for number, line in enumerate(lines, 1):
            stripped = line.strip()
            if stripped == "/// ```swift":
                start, body = number + 1, []
            elif start is not None and stripped == "/// ```":
                yield source, start, "".join(l + "\n" for l in body)
                start = None
            elif start is not None:
                body.append(re.sub(r"^\s*/// ?", "", line))


def located(path, line, code):
    return f'#sourceLocation(file: "{os.path.join(root, path)}", line: {line})\n{code}#sourceLocation()\n'


def write(path, text):
    """Writes only what changed: an unchanged snippet is not compiled again."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as out:
            out.write(text)


def name(path, code):
    """Named by what it is: a target's imports (its dependencies) never change under one name,
    which SwiftPM's build plan does not expect of a target."""
    return "snippet_" + hashlib.sha1((path + "\n" + code).encode()).hexdigest()[:12]


found = list(blocks())
functions_imports, functions = set(), []
for path, line, code in found:
    target = name(path, code)
    imports = [l for l in code.split("\n") if l.startswith("import ")]
    write(f"{snippets_dir}/{target}/main.swift", f"// {path}:{line}, as top-level code.\nimport DocSnippetSupport\n" + located(path, line, code))
    body = "".join("\n" if l.startswith("import ") else l + "\n" for l in code.rstrip("\n").split("\n"))
    functions_imports.update(imports)
    functions.append(f"// {path}:{line}, in a function.\nfunc {target}() async throws {{\n" + located(path, line, body) + "}\n")
imports = "".join(sorted(i + "\n" for i in functions_imports))
in_functions = name("in functions", imports)
write(f"{snippets_dir}/{in_functions}/main.swift", "import DocSnippetSupport\n" + imports + "\n".join(functions))
names = {name(path, code) for path, _, code in found} | {in_functions}
for stale in set(os.listdir(snippets_dir)) - names:
    shutil.rmtree(os.path.join(snippets_dir, stale))
print(f"check-doc-snippets: {len(found)} Swift blocks, each as top-level code and in a function")

# The manifest reads DocSnippets/, which SwiftPM's manifest cache does not know of.
build = subprocess.run([os.environ.get("SWIFT", "swift"), "build", "--package-path", "Examples", "--manifest-cache", "none"], capture_output=True, text=True)
output = build.stdout + build.stderr
documents = tuple(os.path.join(root, p) for p in ("README.md", "docs/", "Sources/"))
problems = []
for line in output.split("\n"):
    match = re.match(r"^(/\S+?):(\d+):(\d+): (error|warning): (.*)$", line)
    if not match or not match.group(1).startswith(documents):
        continue
    if match.group(4) == "warning" and re.search(r"never used|is unused|was never mutated", match.group(5)):
        continue
    problems.append(line.replace(root + "/", ""))
for problem in dict.fromkeys(problems):
    print(problem)
if build.returncode != 0 and not problems:
    print(output[-4000:])
if build.returncode != 0 or problems:
    print(f"check-doc-snippets: {len(set(problems))} problems in the documentation's Swift", file=sys.stderr)
    sys.exit(1)
print("check-doc-snippets: all compile, without warnings")
