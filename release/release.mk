# The release build: what `make release` and `make bench` link, and why each flag
# is there. Included by the Makefile; measured in BENCHMARKS.md §11.

# The archive the toolchain's clang would link for -static-libstdc++: the
# directory holds only libstdc++.a and comes first on the linker's path, so the
# -lstdc++ that SwiftPM and the toolchain both ask for finds it as a static
# archive — only the few KiB the runtime calls, where libstdc++.so cost reachd
# 1 MB of RSS.
STATIC_CXX = .build/static-c++

RELEASE = -c release
# The Swift standard library linked in: no toolchain needed on the target.
RELEASE += --static-swift-stdlib
# libstdc++ (above) and libgcc linked in too.
RELEASE += -Xswiftc -L$(CURDIR)/$(STATIC_CXX) -Xswiftc -Xclang-linker -Xswiftc -static-libgcc
# lld: it packs the relative relocations (DT_RELR, glibc >= 2.36), so reachd stays
# position-independent with 1.5 MB less resident than with RELA; exports nothing
# (no dynamic symbol table to page in); folds identical functions.
RELEASE += -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic -Xlinker --icf=all
# Each Swift function in a section of its own, laid out by release/symbol-order.sh:
# what a change runs first, together (a wake-up on cold caches touches fewer
# pages), then the rest in the order reachd and reachctl first run them: the code
# they run shares pages instead of being spread over 16 MB. A stale order only
# costs memory and wake-up time: lld ignores names it no longer finds, and says
# nothing of them.
RELEASE += -Xswiftc -Xfrontend -Xswiftc -function-sections
RELEASE += -Xlinker --symbol-ordering-file=$(CURDIR)/release/symbol-order.txt -Xlinker --no-warn-symbol-ordering
# SwiftPM does not know the link reads the order file: $(call relink-after-order,PRODUCT...)
# removes each product older than it, so that the build links it again.
relink-after-order = for product in $(1); do [ release/symbol-order.txt -ot .build/release/$$product ] || rm -f .build/release/$$product; done
# The lines a change's wake-up in `reachctl watch --direct` touches (release/wake-lines.sh),
# written into each linked PRODUCT's table after every build: $(call write-wake-lines,PRODUCT...).
# SwiftPM links without them; writing them moves nothing in the file.
write-wake-lines = for product in $(1); do /usr/bin/python3 release/wake-lines.py write .build/release/$$product || exit 1; done
# Relocations resolved at start and the tables then read-only (full RELRO).
RELEASE += -Xlinker -z -Xlinker now
# Size over speed: reachd is idle nearly always; smaller text is fewer pages resident.
RELEASE += -Xswiftc -Osize
# No unwind tables for the C shims: nothing unwinds through them.
RELEASE += -Xcc -fno-asynchronous-unwind-tables
