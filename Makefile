# reachd — `make run` and `make test` are all a fresh Debian machine needs.

SWIFT       ?= swift
PREFIX      ?= /usr
# Building: libnl, libsystemd; `make deb`: debhelper, jq (reachctl's manual);
# the tests: a bus, iproute2, openssl and curl as peers, python3 as a hostile local
# user (the limits tests) and as test servers, dnsmasq as a DHCP server announcing a
# captive portal, tayga (NAT64 and CLAT) and unbound (DNS64) as a real 464XLAT network,
# and for the system test
# Debian 12 and 13 root file systems (mmdebstrap) booted by systemd-nspawn, binutils (the idle
# pages per section, scripts/idle-pages.py; the release build's wake-up lines,
# release/wake-lines.py); `make bench`: GNU time (a child's own peak memory).
DEB_PACKAGES = libnl-3-dev libsystemd-dev libstdc++-12-dev systemd dbus-daemon iproute2 procps util-linux pkg-config openssl publicsuffix ca-certificates curl python3 dnsmasq-base prometheus python3-gi gir1.2-glib-2.0 python3-pyqt6 tayga unbound dbus-bin libglib2.0-bin \
               debhelper dpkg-dev jq mmdebstrap systemd-container lintian man-db time binutils
DESTDIR     ?=
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
GENERATORDIR ?= $(PREFIX)/lib/systemd/system-generators
# The one version (package, --version): written in Sources/ProgramSupport/ReachdVersion.swift only.
VERSION     := $(shell sed -n 's/^public let reachdVersion = "\(.*\)"$$/\1/p' Sources/ProgramSupport/ReachdVersion.swift)
ARCH         = $(shell dpkg --print-architecture)
DEB          = .build/deb/reachd_$(VERSION)_$(ARCH).deb
# The Debian releases `make systemtest` boots: 12 (systemd 252) and 13 (systemd 257).
SYSTEST_SUITES ?= bookworm trixie
DOCS         = .build/docs
# Dates in the manual and the changelog: the last commit's, so a rebuild is the same.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH
SUDO        := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
# The toolchain's own bin/, where swift really is: its clang, and ../libexec.
TOOLCHAIN_BIN = $(dir $(realpath $(shell command -v $(SWIFT))))
RELEASE_BIN  = .build/release-bin
# The release link's flags, each with its reason.
include release/release.mk

# `make fuzz`: each parser's libFuzzer target for FUZZ_SECONDS (0: no limit) or
# FUZZ_RUNS executions (-1: no limit), whichever ends first; FUZZ_TARGETS picks some.
FUZZ_BUILD   = .build-fuzz
FUZZ_TARGETS ?= toml config pin certificates netlink helper-messages report-spool resolv-conf capport documents
FUZZ_SECONDS ?= 15
FUZZ_RUNS    ?= -1

.PHONY: deps build run test unittest format format-check package-check examples api-docs man-check systemtest fuzz-build fuzz bench-build bench version release docs manual install install-files deb clean

## Install the system packages that are missing (apt-get update first on a fresh machine).
deps:
	@missing=""; \
	for package in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "make: no Swift toolchain ($(SWIFT)) on PATH" >&2; exit 1; }

build: deps
	$(SWIFT) build

## The daemon in the foreground on this machine: the private socket, and the
## system bus name when the policy lets this user own it. In a second terminal:
## .build/debug/reachctl status (or watch).
run: build
	.build/debug/reachd --log-level info $(if $(wildcard /etc/reachd/reachd.toml),,--config systemd/reachd.toml)

## Every test. Kernel tests create (and always remove) network namespaces: root only.
## Then every parser fuzzed briefly, and the package under a real systemd
## (Tests/System/package-test.sh).
test: deps format-check unittest examples api-docs fuzz package-check man-check systemtest bench-build

## Every Swift file as swift-format (the toolchain's) writes it, by .swift-format:
## `make format` rewrites them, `make format-check` (in make test) fails on any difference.
SWIFT_FILES = Package.swift Sources Tests Examples/Package.swift Examples/Sources FuzzTesting/Package.swift FuzzTesting/Sources
format:
	$(SWIFT) format --in-place --recursive --parallel $(SWIFT_FILES)
format-check: deps
	$(SWIFT) format lint --strict --recursive --parallel $(SWIFT_FILES)

## As an ordinary user, the network namespace tests run in a user namespace of the
## test process's own, and what needs root (other users, a system bus name) is
## skipped, each with its reason (docs/development.md, "Tests"); root runs them all.
unittest: deps
	@[ "$$(id -u)" -eq 0 ] || echo "make unittest: not root: the tests that need other users or a system bus name are skipped (sudo make test runs them)" >&2
	$(SWIFT) build --build-tests
	@# Failures scroll away under the passing tests: repeat them at the end,
	@# where a CI log's tail shows them, then the runner's own closing line.
	@# At most 12 tests at once: started all together (some 300) on two CPUs, the
	@# tests that allow a bounded time for an answer waited seconds for a CPU and
	@# failed for it (docs/development.md, "Tests").
	@{ $(SWIFT) test --experimental-maximum-parallelization-width 12 2>&1; echo $$? > .build/test-status; } | tee .build/test.log; \
	status=$$(cat .build/test-status); \
	if [ "$$status" -ne 0 ]; then \
	  echo "==== make test: what failed (all of it in .build/test.log) ===="; \
	  grep -E '✘|Fatal error|error:' .build/test.log | grep -v '✘ Test run' | head -60; \
	  grep -E '(Test run|Executed) .*' .build/test.log | tail -1; \
	fi; \
	exit $$status

## The Debian package installed into a booted Debian 12, then 13 (systemd-nspawn),
## driven from outside as an operator would: install, reload, watchdog, purge.
## The package's budget (BENCHMARKS.md §11) and lintian on the .deb and the source
## package: fails above the budget, or on any lintian tag not overridden in debian/.
# Installed-Size is in KiB (dpkg's "KB"); the .deb's budget is in bytes.
INSTALLED_SIZE_LIMIT = 25600
DEB_SIZE_LIMIT       = 7000000
package-check: deb
	@installed=$$(dpkg-deb -f $(DEB) Installed-Size); bytes=$$(stat -c %s $(DEB)); \
	echo "package: Installed-Size $$installed KB (budget $(INSTALLED_SIZE_LIMIT)), $(DEB) $$bytes bytes (budget $(DEB_SIZE_LIMIT))"; \
	[ "$$installed" -le $(INSTALLED_SIZE_LIMIT) ] || { echo "make: the package grew past its Installed-Size budget" >&2; exit 1; }; \
	[ "$$bytes" -le $(DEB_SIZE_LIMIT) ] || { echo "make: the .deb grew past its budget" >&2; exit 1; }
	rm -rf .build/source && mkdir -p .build/source/reachd-$(VERSION)
	git archive HEAD | tar -x -C .build/source/reachd-$(VERSION)
	cp debian/changelog .build/source/reachd-$(VERSION)/debian/changelog
	cd .build/source && dpkg-source --build reachd-$(VERSION) >/dev/null
	lintian --fail-on warning,error --display-info $(DEB) .build/source/reachd_$(VERSION).dsc

## Examples/, a package of its own that uses this one by path as an app would: it
## must build, with every Swift block of the README, docs/ and DocC compiled as
## written, as top-level code and in a function, in Swift 6 mode (scripts/check-doc-snippets.py);
## and a fresh package made as docs/swift-libraries.md says builds and runs each product.
examples: deps
	SWIFT=$(SWIFT) scripts/check-doc-snippets.py
	SWIFT=$(SWIFT) scripts/check-fresh-package.sh

## The DocC documentation of the library products (Reachability with the
## ReachabilityCore it re-exports, ReachabilityClient, ReachabilityCompat, ServerTrust), one combined
## site for static hosting in $(DOCS)/api, and each target's on its own as the Swift
## Package Index builds it (.spi.yml). Fails on any DocC warning (a broken
## symbol link, an undocumented parameter) and on any public symbol without a
## doc comment (scripts/check-doc-coverage.py).
DOC_TARGETS = Reachability ReachabilityCore ReachabilityClient ReachabilityCompat ServerTrust TrustVocabulary
api-docs: deps
	rm -rf $(DOCS)/api $(DOCS)/alone && mkdir -p $(DOCS)/alone
	$(SWIFT) package --allow-writing-to-directory $(DOCS)/api generate-documentation \
	  $(foreach target,$(DOC_TARGETS),--target $(target)) --enable-experimental-combined-documentation \
	  --warnings-as-errors --transform-for-static-hosting --output-path $(DOCS)/api
	for target in $(DOC_TARGETS); do \
	  $(SWIFT) package --allow-writing-to-directory $(DOCS)/alone generate-documentation --target $$target \
	    --warnings-as-errors --output-path $(DOCS)/alone/$$target || exit 1; done
	scripts/check-doc-coverage.py $(DOC_TARGETS)

## The manual pages, linted (man --warnings), and checked against the code: every
## option of reachctl and reachd and every key of reachd.toml is in its page.
man-check: manual
	scripts/check-man-pages.sh $(DOCS)/man

systemtest: deb
	for suite in $(SYSTEST_SUITES); do REACHD_SYSTEST_SUITE=$$suite Tests/System/package-test.sh $(DEB) || exit 1; done

## The libFuzzer driver (FuzzTesting/, a package of its own), with ASan.
fuzz-build: deps
	cd FuzzTesting && $(SWIFT) build -c release --scratch-path ../$(FUZZ_BUILD) --product reachd-fuzz \
	  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library

## Fuzzes every parser of outside input, from its seed corpus (FuzzTesting/Corpus,
## read-only) and what earlier runs found ($(FUZZ_BUILD)/corpus). A crash or a leak
## stops the run; its input is left in $(FUZZ_BUILD)/artifacts. Long run, as
## recorded in BENCHMARKS.md: make fuzz FUZZ_SECONDS=0 FUZZ_RUNS=10000000
fuzz: fuzz-build
	@for target in $(FUZZ_TARGETS); do \
	  dictionary=FuzzTesting/Dictionaries/$$target.dict; \
	  case $$target in toml) ;; config|pin) ;; helper-messages|report-spool|documents) dictionary=FuzzTesting/Dictionaries/json.dict ;; *) dictionary= ;; esac; \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$target $(FUZZ_BUILD)/artifacts; \
	  echo "fuzz: $$target"; \
	  REACHD_FUZZ_TARGET=$$target SWIFT_BACKTRACE=enable=no $(FUZZ_BUILD)/release/reachd-fuzz \
	    $${dictionary:+-dict=$$dictionary} -max_total_time=$(FUZZ_SECONDS) -runs=$(FUZZ_RUNS) -max_len=65536 \
	    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$target- \
	    $(FUZZ_BUILD)/corpus/$$target FuzzTesting/Corpus/$$target > $(FUZZ_BUILD)/$$target.log 2>&1 \
	  || { tail -60 $(FUZZ_BUILD)/$$target.log; echo "fuzz: $$target FAILED (log: $(FUZZ_BUILD)/$$target.log)"; exit 1; }; \
	  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|Done [0-9]+ runs' $(FUZZ_BUILD)/$$target.log | tr '\n' ' '; echo; \
	done

## The benchmarks are a target only under REACHD_BENCHMARKS=1 (Package.swift): a plain
## `swift build` compiles none of them; make test builds them (debug) so that they keep compiling,
## last: a build under another manifest rebuilds what it shares with the next build that has none.
bench-build: deps
	REACHD_BENCHMARKS=1 $(SWIFT) build --product reachability-bench

## Benchmarks against a raw netlink listener in the same namespace; prints numbers.
bench: deps $(STATIC_CXX)/libstdc++.a
	@[ "$$(id -u)" -eq 0 ] || { echo "make bench: needs root (network namespaces)" >&2; exit 1; }
	@# The programs the benchmarks run, not every target: TestTraits imports Testing, which a static release build has not.
	$(call relink-after-order,reachd reachctl reachd-trust reachability-bench)
	for product in reachd reachctl reachd-trust; do $(SWIFT) build $(RELEASE) --product $$product || exit 1; done
	$(call write-wake-lines,reachctl)
	REACHD_BENCHMARKS=1 $(SWIFT) build $(RELEASE) --product reachability-bench
	@# Linked statically, a crash prints its backtrace only with the static backtracer named.
	SWIFT_BACKTRACE=enable=yes,interactive=no,swift-backtrace=$(TOOLCHAIN_BIN)../libexec/swift/linux/swift-backtrace-static \
	  .build/release/reachability-bench

# The archive the toolchain's clang would link for -static-libstdc++.
$(STATIC_CXX)/libstdc++.a:
	@archive=$$($(TOOLCHAIN_BIN)clang -print-file-name=libstdc++.a); \
	[ -f "$$archive" ] || { echo "make: no libstdc++.a (libstdc++-12-dev) for the Swift toolchain's clang" >&2; exit 1; }; \
	mkdir -p $(STATIC_CXX) && ln -sfn "$$archive" $@

version:
	@echo $(VERSION)

## The release binary, with the static Swift standard library (no toolchain needed
## on the target): reachd, reachctl and reachd-trust in one file, run under their
## names ($(RELEASE_BIN) has the three links; README, "Installed files").
release: deps $(STATIC_CXX)/libstdc++.a
	$(call relink-after-order,reachd-multicall)
	$(SWIFT) build $(RELEASE) --product reachd-multicall
	$(call write-wake-lines,reachd-multicall)
	mkdir -p $(RELEASE_BIN)
	for name in reachd reachctl reachd-trust; do ln -sfn ../release/reachd-multicall $(RELEASE_BIN)/$$name; done

## All documentation: the manual and the libraries' DocC site.
docs: manual api-docs

## Manual pages and shell completions, from the release binaries. reachctl(1) is
## generated by swift-argument-parser's generate-manual from reachctl's own help,
## with the TLS commands' help taken from reachd-trust, which runs them.
manual: release
	$(SWIFT) build -c release --package-path .build/checkouts/swift-argument-parser --scratch-path .build/tools --product generate-manual
	mkdir -p $(DOCS)/man $(DOCS)/completions
	REACHCTL=$(RELEASE_BIN)/reachctl REACHD_TRUST=$(RELEASE_BIN)/reachd-trust .build/tools/release/generate-manual scripts/reachctl-help.sh --section 1 \
	  --date $$(date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%d) --authors "the reachd developers" -o $(DOCS)/man
	for page in reachd.8 reachd.toml.5; do sed 's/@VERSION@/$(VERSION)/' man/$$page > $(DOCS)/man/$$page; done
	for shell in bash zsh fish; do $(RELEASE_BIN)/reachctl --generate-completion-script $$shell > $(DOCS)/completions/reachctl.$$shell; done
	@# bash sources completions: a #! line there is noise (lintian: bash-completion-with-hashbang).
	sed -i '1{/^#!/d}' $(DOCS)/completions/reachctl.bash

## Release binaries (static, stripped), units, D-Bus policy, sysusers, manual,
## completions, and the example config (never over an existing one).
install: release manual install-files

## What `install` installs, from what `release` and `manual` built.
install-files:
	install -D -s -m 0755 .build/release/reachd-multicall $(DESTDIR)$(PREFIX)/bin/reachd
	ln -sfn reachd $(DESTDIR)$(PREFIX)/bin/reachctl
	install -d $(DESTDIR)$(PREFIX)/libexec
	ln -sfn ../bin/reachd $(DESTDIR)$(PREFIX)/libexec/reachd-trust
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|/usr/bin/|$(PREFIX)/bin/|g' systemd/reachd.service > $(DESTDIR)$(UNITDIR)/reachd.service
	sed 's|/usr/bin/|$(PREFIX)/bin/|g' systemd/reachd-wait-online.service > $(DESTDIR)$(UNITDIR)/reachd-wait-online.service
	install -D -m 0755 systemd/reachd-generator $(DESTDIR)$(GENERATORDIR)/reachd-generator
	install -D -m 0644 systemd/io.reachd.Reachability1.conf $(DESTDIR)$(PREFIX)/share/dbus-1/system.d/io.reachd.Reachability1.conf
	install -D -m 0644 systemd/io.reachd.NetworkManagerCompat.conf $(DESTDIR)$(PREFIX)/share/reachd/dbus-1/io.reachd.NetworkManagerCompat.conf
	install -D -m 0644 systemd/reachd.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/reachd.conf
	install -D -m 0644 prometheus/reachd.rules.yml $(DESTDIR)$(PREFIX)/share/reachd/prometheus/reachd.rules.yml
	install -D -m 0644 $(DOCS)/man/reachctl.1 $(DESTDIR)$(PREFIX)/share/man/man1/reachctl.1
	install -D -m 0644 $(DOCS)/man/reachd.8 $(DESTDIR)$(PREFIX)/share/man/man8/reachd.8
	install -D -m 0644 $(DOCS)/man/reachd.toml.5 $(DESTDIR)$(PREFIX)/share/man/man5/reachd.toml.5
	install -D -m 0644 $(DOCS)/completions/reachctl.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/reachctl
	install -D -m 0644 $(DOCS)/completions/reachctl.zsh $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_reachctl
	install -D -m 0644 $(DOCS)/completions/reachctl.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/reachctl.fish
	[ -e $(DESTDIR)$(SYSCONFDIR)/reachd/reachd.toml ] || install -D -m 0644 systemd/reachd.toml $(DESTDIR)$(SYSCONFDIR)/reachd/reachd.toml

## The Debian package, .build/deb/reachd_VERSION_ARCH.deb, built by debhelper
## (debian/). debian/changelog is written here from the one version. debian/rules
## binary rather than dpkg-buildpackage: that one writes .changes and .buildinfo
## into the parent directory, which is not this build's (CI keeps shared/ there).
deb: deps
	@[ -n "$(VERSION)" ] || { echo "make deb: no version in Sources/ProgramSupport/ReachdVersion.swift" >&2; exit 1; }
	printf 'reachd (%s) unstable; urgency=medium\n\n  * Built from the reachd repository; its history has the changes.\n\n -- reachd developers <reachd-dev@reachd.invalid>  %s\n' \
	  "$(VERSION)" "$$(date -u -R -d @$(SOURCE_DATE_EPOCH))" > debian/changelog
	@# dh skips the build when its stamp is there: without this, a second `make deb`
	@# packaged the release binaries of the first, whatever changed since.
	rm -f $(DEB) debian/debhelper-build-stamp
	debian/rules binary
	@echo "built $(DEB)"

clean:
	$(SWIFT) package clean
