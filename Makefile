# reachd — `make run` and `make test` are all a fresh Debian machine needs.

SWIFT       ?= swift
PREFIX      ?= /usr
DEB_PACKAGES = libnl-3-dev libnl-route-3-dev libsystemd-dev dbus-daemon iproute2 procps pkg-config openssl publicsuffix ca-certificates curl
SUDO        := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: deps build run test bench clean

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

## Watch this machine's network path until interrupted (the daemon comes in a later issue).
run: build
	$(SWIFT) run reachctl watch

## Every test. Kernel tests create (and always remove) network namespaces: root only.
test: deps
	@[ "$$(id -u)" -eq 0 ] || { echo "make test: the kernel tests create network namespaces; run it as root (sudo make test)" >&2; exit 1; }
	$(SWIFT) build --build-tests
	$(SWIFT) test

## Benchmarks against a raw netlink listener in the same namespace; prints numbers.
bench: deps
	@[ "$$(id -u)" -eq 0 ] || { echo "make bench: needs root (network namespaces)" >&2; exit 1; }
	$(SWIFT) build -c release --static-swift-stdlib
	.build/release/reachability-bench

clean:
	$(SWIFT) package clean
