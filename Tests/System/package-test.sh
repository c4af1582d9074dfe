#!/usr/bin/env bash
# package-test.sh DEB — the Debian package under a real systemd.
#
# Boots Debian 12, or 13 (mmdebstrap --variant=minbase, cached) with systemd-nspawn
# -b --private-network and, from the host side, does what an operator does:
# dpkg -i, reachctl as root and as nobody over the system bus, busctl, a reload
# with a good and with a broken config, kill -9 and SIGSTOP (the watchdog), a
# boot ordered by reachd-wait-online.service, an upgrade, dpkg -r and --purge.
# The gateway is a network namespace of its own at the far end of a veth; the
# TLS server it runs is the only peer, and nothing leaves the two namespaces.
#
# Everything it makes (root file system copy, container, namespace, veth) is
# removed on exit, also on failure. Ends with "N passed, N failed".
#
# Environment: REACHD_SYSTEST_SUITE (default bookworm, Debian 12; trixie is
# Debian 13) is the release booted; REACHD_SYSTEST_CACHE (default /var/cache/reachd-systest) keeps
# the root file system between runs; REACHD_SYSTEST_KEEP=1 keeps the work
# directory (console log, journal) for a post-mortem.
set -uo pipefail

deb=$(realpath "${1:?usage: $0 PATH/TO/reachd_VERSION_ARCH.deb}")
[ "$(id -u)" -eq 0 ] || { echo "package-test: needs root (systemd-nspawn, network namespaces)" >&2; exit 1; }
for tool in mmdebstrap systemd-nspawn nsenter openssl dpkg-deb ip python3; do
    command -v "$tool" >/dev/null || { echo "package-test: $tool is missing (make deps installs it)" >&2; exit 1; }
done

here=$(dirname "$(realpath "$0")")
id=rs$$
machine=reachd-$id
gateway=$machine-gw
work=$(mktemp -d /var/tmp/reachd-systest.XXXXXX)
root=$work/root
cache=${REACHD_SYSTEST_CACHE:-/var/cache/reachd-systest}
suite=${REACHD_SYSTEST_SUITE:-bookworm}
version=$(dpkg-deb -f "$deb" Version)
passed=0
failed=0
spawn=
leader=
tls_server=
probe_server=
capport_server=
dhcp_server=

# MARK: reporting

log() { printf '\n== %s\n' "$*"; }
pass() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
# fail WHAT [CONTEXT…]: what the operator would have seen follows the line.
fail() {
    failed=$((failed + 1))
    printf '  FAIL  %s\n' "$1"
    shift
    [ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/        | /'
    if [ -n "$leader" ]; then
        inside systemctl status --no-pager --lines=15 reachd.service 2>&1 | sed 's/^/        | /'
    fi
    return 0
}
# expect WHAT COMMAND…: passes when the command exits 0; else shows its output.
expect() {
    local what=$1 output
    shift
    if output=$("$@" 2>&1); then pass "$what"; else fail "$what" "\$ ${*}" "$output"; fi
}
# eventually SECONDS WHAT COMMAND…: like expect, retried every 0.2 s.
eventually() {
    local seconds=$1 what=$2 output deadline
    shift 2
    deadline=$((SECONDS + seconds))
    until output=$("$@" 2>&1); do
        if [ $SECONDS -ge $deadline ]; then
            fail "$what (still not after ${seconds}s)" "\$ ${*}" "$output"
            return 1
        fi
        sleep 0.2
    done
    pass "$what"
}

# MARK: the container

# Runs a command inside the container as root, with no locale and a plain PATH,
# as a shell there would.
inside() {
    nsenter --target "$leader" --all -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
as_nobody() { inside setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

cleanup() {
    local status=$?
    if [ -n "$spawn" ] && kill -0 "$spawn" 2>/dev/null; then
        [ -n "$leader" ] && inside journalctl --no-pager -o short-monotonic > "$work/journal.txt" 2>&1
        kill -TERM "$spawn" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$spawn" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$spawn" 2>/dev/null
        wait "$spawn" 2>/dev/null
    fi
    [ -n "$tls_server" ] && kill "$tls_server" 2>/dev/null
    [ -n "$probe_server" ] && kill "$probe_server" 2>/dev/null
    [ -n "$capport_server" ] && kill "$capport_server" 2>/dev/null
    [ -n "$dhcp_server" ] && kill "$dhcp_server" 2>/dev/null
    ip netns delete "$gateway" 2>/dev/null
    rm -rf "/run/systemd/nspawn/propagate/$machine"
    if [ "${REACHD_SYSTEST_KEEP:-0}" = 1 ]; then
        rm -rf "$root"
        echo "package-test: kept $work (console.log, journal.txt)"
    else
        rm -rf "$work"
    fi
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Debian 12 with systemd, dbus, iproute2 and what the package depends on and
# recommends (as `apt install ./reachd.deb` would bring), from this machine's
# apt sources. Cached by that list.
root_filesystem() {
    local packages key tarball sources
    # NetworkManager beside reachd (installed, not enabled), and the real GLib and Qt clients of its API.
    # systemd-resolved: the resolvers reachd reads over D-Bus (the path's dns).
    packages=$( { echo systemd systemd-sysv systemd-resolved dbus iproute2 network-manager python3-gi gir1.2-glib-2.0 python3-pyqt6
                  dpkg-deb -f "$deb" Depends Recommends | sed 's/^[A-Za-z-]*://' | tr ',' '\n' | sed 's/|.*//; s/(.*)//'; } |
                tr -s ' \n' '\n' | sed '/^$/d' | sort -u | tr '\n' ',' | sed 's/,$//')
    key=$(echo "$suite $packages" | sha256sum | cut -c1-16)
    tarball=$cache/$suite-minbase-$key.tar
    if [ ! -s "$tarball" ]; then
        log "building the Debian $suite root file system ($packages)"
        mkdir -p "$cache"
        if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
            sources=$(for file in /etc/apt/sources.list.d/*.sources; do cat "$file"; echo; done)
        else
            sources=$(cat /etc/apt/sources.list)
        fi
        # This machine's sources, for the suite booted.
        echo "$sources" | sed "s/bookworm/$suite/g" | mmdebstrap --quiet --variant=minbase --include="$packages" --format=tar \
            --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='Acquire::Check-Date "false"' \
            "$suite" "$tarball.partial" - || { rm -f "$tarball.partial"; return 1; }
        mv "$tarball.partial" "$tarball"
    fi
    mkdir -p "$root"
    tar -C "$root" -xf "$tarball"
    # NetworkManager is there, as on a host where it was installed and switched off;
    # when the test starts it, it manages no device (eth0 is the test's).
    rm -f "$root"/etc/systemd/system/*.wants/NetworkManager*.service "$root"/etc/systemd/system/dbus-org.freedesktop.nm-dispatcher.service
    printf '[keyfile]\nunmanaged-devices=*\n' > "$root/etc/NetworkManager/conf.d/99-package-test.conf"
    cp "$here/../ToolkitClients/"*.py "$root/usr/local/bin/"
    # A global resolver for systemd-resolved: the gateway, as a DHCP server would announce.
    mkdir -p "$root/etc/systemd/resolved.conf.d"
    printf '[Resolve]\nDNS=10.77.0.1\n' > "$root/etc/systemd/resolved.conf.d/90-package-test.conf"
}

# Boots the container and waits for its init. After a reboot inside, nspawn
# exits (with --keep-unit there is no unit to restart it): it is started again,
# and the container has a fresh network namespace.
boot() {
    if [ -n "$spawn" ]; then
        for _ in $(seq 100); do kill -0 "$spawn" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$spawn" 2>/dev/null && { echo "package-test: the container did not go down for its reboot" >&2; return 1; }
        wait "$spawn" 2>/dev/null
    fi
    systemd-nspawn --quiet --directory="$root" --machine="$machine" --boot --private-network \
        --register=no --keep-unit --console=passive >> "$work/console.log" 2>&1 &
    spawn=$!
    local previous=$leader deadline=$((SECONDS + 30))
    leader=
    while [ $SECONDS -lt $deadline ]; do
        local child
        child=$(pgrep -P "$spawn" 2>/dev/null | head -1)
        if [ -n "$child" ] && [ "$child" != "$previous" ] && [ -e "/proc/$child/root/run/systemd/system" ]; then
            leader=$child
            return 0
        fi
        kill -0 "$spawn" 2>/dev/null || break
        sleep 0.1
    done
    echo "package-test: the container did not boot; its console:" >&2
    tail -30 "$work/console.log" >&2
    return 1
}

# A veth from the gateway namespace into the container (eth0 there), with a
# default route: the container is "wired".
plug_in() {
    ip netns add "$gateway" 2>/dev/null || true
    ip -n "$gateway" link set dev lo up
    ip link add name "vg-$id" netns "$gateway" type veth peer name eth0 netns "$leader"
    ip -n "$gateway" address add 10.77.0.1/24 dev "vg-$id"
    ip -n "$gateway" link set dev "vg-$id" up
    nsenter --target "$leader" --net ip address add 10.77.0.2/24 dev eth0
    nsenter --target "$leader" --net ip link set dev eth0 up
    nsenter --target "$leader" --net ip route add default via 10.77.0.1
}

# Predicates for expect/eventually.
not() { ! "$@"; }
status_is() { inside reachctl status --json | grep -q "\"status\":\"$1\""; }
main_pid() { inside systemctl show --property=MainPID --value reachd.service; }
state_is() { [ "$(inside systemctl show --property=ActiveState --value "$1")" = "$2" ]; }
restarted() { local pid; pid=$(main_pid); [ "$pid" != 0 ] && [ "$pid" != "$1" ] && state_is reachd.service active; }
# The package lists every one of these files (dpkg -L); names the missing ones.
package_has() {
    local listing missing=
    listing=$(inside dpkg -L reachd)
    for file; do grep -qxF "$file" <<< "$listing" || missing="$missing $file"; done
    [ -z "$missing" ] || { echo "not in dpkg -L reachd:$missing"; return 1; }
}
# The command's output matches, whatever its exit status (systemctl is-enabled says "disabled" with 1).
output_has() { local pattern=$1 output; shift; output=$("$@" 2>&1); grep -qE -- "$pattern" <<< "$output" || { echo "$output"; return 1; }; }
# The lines reachd's own processes (reachd, reachd-trust, the reload's reachctl)
# wrote to the journal, less any naming the broken config this test writes or
# the connections the test's first user opens past the limit on purpose.
journal_of_reachd() {
    inside journalctl --no-pager -o short "$@" _SYSTEMD_UNIT=reachd.service \
        | grep -v -e '^-- ' -e "reachd.toml:${bad_line:-none}" -e "closed connections of uid ${alice:-none}: more than 32"
}
clean_journal() {
    local lines
    lines=$( { journal_of_reachd | grep -iE 'fail|error|denied|warn'; journal_of_reachd -p warning; } | sort -u)
    [ -z "$lines" ] || { echo "$lines"; return 1; }
}

# MARK: certificates and the TLS server on the gateway

# A CA, a server certificate for pinned.test, and a backup key kept "offline"
# (in no chain), whose pin goes beside the server key's as reachd advises.
make_certificates() {
    local pki=$work/pki
    mkdir -p "$pki"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=reachd test CA" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
        -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=pinned.test" \
        -keyout "$pki/server.key" -out "$pki/server.csr" 2>/dev/null &&
    printf 'subjectAltName=DNS:pinned.test\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' > "$pki/ext" &&
    openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
        -extfile "$pki/ext" -out "$pki/server.pem" 2>/dev/null &&
    pin=$(openssl pkey -in "$pki/server.key" -pubout -outform DER | openssl dgst -sha256 -binary | base64) &&
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/backup.key" 2>/dev/null &&
    backup_pin=$(openssl pkey -in "$pki/backup.key" -pubout -outform DER | openssl dgst -sha256 -binary | base64)
}

serve_tls() {
    ip netns exec "$gateway" openssl s_server -quiet -accept 10.77.0.1:8443 -naccept 1000 \
        -cert "$work/pki/server.pem" -key "$work/pki/server.key" -cert_chain "$work/pki/ca.pem" \
        > "$work/s_server.log" 2>&1 < /dev/null &
    tls_server=$!
    gateway_listens 8443
}

# The network's captive-portal API (RFC 8908) on the gateway: https://10.77.0.1:4443/capport
# with a certificate for the address from its own CA, answering the file capport-answer.
serve_capport() {
    local pki=$work/pki
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=reachd test portal CA" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
        -keyout "$pki/capport-ca.key" -out "$pki/capport-ca.pem" 2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=portal" \
        -keyout "$pki/capport.key" -out "$pki/capport.csr" 2>/dev/null &&
    printf 'subjectAltName=IP:10.77.0.1\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' > "$pki/capport.ext" &&
    openssl x509 -req -in "$pki/capport.csr" -CA "$pki/capport-ca.pem" -CAkey "$pki/capport-ca.key" -CAcreateserial -days 30 \
        -extfile "$pki/capport.ext" -out "$pki/capport.pem" 2>/dev/null || return 1
    printf '{"captive": true, "user-portal-url": "https://10.77.0.1:4443/login"}' > "$work/capport-answer"
    ip netns exec "$gateway" python3 -c '
import http.server, ssl, sys
class API(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with open(sys.argv[4], "a") as log: log.write("%s %s\n" % (self.path, self.headers.get("Accept")))
        body = open(sys.argv[3], "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/captive+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *arguments): pass
server = http.server.ThreadingHTTPServer(("10.77.0.1", 4443), API)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
' "$pki/capport.pem" "$pki/capport.key" "$work/capport-answer" "$work/capport-requests.log" > "$work/capport-server.log" 2>&1 < /dev/null &
    capport_server=$!
    gateway_listens 4443
}

# Waits up to 5 s for a listener on PORT in the gateway namespace.
gateway_listens() {
    for _ in $(seq 50); do
        ip netns exec "$gateway" ss -Hltn "sport = :$1" | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

# The connectivity check's endpoint on the gateway: 204 to every GET, one line per request.
serve_probe() {
    ip netns exec "$gateway" python3 -c '
import http.server, sys
class Probe(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with open(sys.argv[1], "a") as log: log.write(self.path + "\n")
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *arguments): pass
http.server.ThreadingHTTPServer(("10.77.0.1", 8080), Probe).serve_forever()
' "$work/probe-requests.log" > "$work/probe-server.log" 2>&1 < /dev/null &
    probe_server=$!
    gateway_listens 8080
}

good_config() {
    cat > "$root/etc/reachd/reachd.toml" <<EOF
# written by package-test.sh
[trust]
recheck = "on-change"
timeout = "3s"

[[trust.host]]
match = "pinned.test"
port = 8443
connect = "10.77.0.1"
mode = "public-key"
pins = ["sha256/$pin", "sha256/$backup_pin"]
anchors = ["test-ca.pem"]

[connectivity]
uri = "http://10.77.0.1:8080/generate_204"
timeout = "3s"

[metrics]
listen = "127.0.0.1:9748"
textfile = "/var/lib/prometheus/node-exporter/reachd.prom"
EOF
}

# GET /metrics inside the container, with bash alone (minimal Debian has no curl).
scrape() { inside bash -c 'exec 3<>/dev/tcp/127.0.0.1/9748 && printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3'; }

# MARK: the run

log "root file system and boot"
root_filesystem || { fail "a Debian $suite root file system from mmdebstrap"; exit 1; }
boot || { fail "the container boots"; exit 1; }
eventually 60 "systemd in the container is up" output_has 'running|degraded' inside systemctl is-system-running --wait

log "install: dpkg -i $(basename "$deb")"
# node_exporter's textfile directory, there before reachd starts (the unit's ReadWritePaths=).
mkdir -p "$root/var/lib/prometheus/node-exporter"
cp "$deb" "$root/root/reachd.deb"
expect "dpkg -i installs the package" inside dpkg -i /root/reachd.deb
expect "reachd.service is enabled" inside systemctl is-enabled --quiet reachd.service
eventually 20 "reachd.service is active (READY=1 reached)" state_is reachd.service active
expect "systemctl status shows the path in its status line" output_has 'Status: "unreachable \(no-interface\)"' inside systemctl status --no-pager reachd.service
expect "reachd --version is the package's version ($version)" output_has "^$version\$" inside reachd --version
expect "reachctl --version is the package's version" output_has "^$version\$" inside reachctl --version
expect "reachd-trust is in /usr/libexec" inside test -x /usr/libexec/reachd-trust
expect "the example config is a conffile" output_has '/etc/reachd/reachd.toml' inside dpkg-query -W -f='${Conffiles}' reachd
expect "the manual pages are installed" package_has /usr/share/man/man1/reachctl.1.gz /usr/share/man/man8/reachd.8.gz /usr/share/man/man5/reachd.toml.5.gz
expect "the completions are installed (bash, zsh, fish)" package_has /usr/share/bash-completion/completions/reachctl \
    /usr/share/zsh/vendor-completions/_reachctl /usr/share/fish/vendor_completions.d/reachctl.fish
# The operator lets reachd write node_exporter's directory (the group is reachd's, made by the package).
inside chgrp reachd /var/lib/prometheus/node-exporter
inside chmod 0775 /var/lib/prometheus/node-exporter
expect "the Prometheus alert rules are installed" package_has /usr/share/reachd/prometheus/reachd.rules.yml
expect "reachd-wait-online.service is installed, not enabled" output_has '^disabled$' inside systemctl is-enabled reachd-wait-online.service

log "the path through the system bus"
plug_in || fail "a veth into the container"
eventually 10 "reachctl status says wired once eth0 has a default route" status_is wired
# --bus system: the system bus name, not the private socket the client would fall back to.
expect "root: reachctl status --bus system says wired, from the daemon" output_has '"status":"wired".*"source":"daemon"' inside reachctl status --bus system --json
expect "nobody: reachctl status --bus system says wired, from the daemon" output_has '"status":"wired".*"source":"daemon"' as_nobody reachctl status --bus system --json
expect "nobody: reachctl reload is refused" not as_nobody reachctl reload
expect "systemctl status shows 'wired dev eth0'" output_has 'Status: "wired dev eth0"' inside systemctl status --no-pager reachd.service
expect "busctl introspects the object on the system bus" output_has '^\.Status +property +s +"wired"' inside busctl --system introspect io.reachd.Reachability1 /io/reachd/Reachability1
expect "nobody: busctl reads the Status property" output_has '^s "wired"$' as_nobody busctl --system get-property io.reachd.Reachability1 /io/reachd/Reachability1 io.reachd.Reachability1 Status

log "DNS: the resolvers systemd-resolved uses, read over D-Bus and followed"
object=(io.reachd.Reachability1 /io/reachd/Reachability1 io.reachd.Reachability1)
eventually 10 "the path's dns: resolved's global server (resolved.conf), usable" \
    output_has '"dns":\{"source":"resolved","servers":\["10.77.0.1"\],"usable":\["10.77.0.1"\]\}' inside reachctl status --json
expect "resolved takes a per-link server for eth0 (resolvectl dns)" inside resolvectl dns eth0 10.77.0.53
eventually 10 "followed: the per-link server is listed with its link, and usable" \
    output_has '"usable":\[[^]]*"10.77.0.53%eth0"' inside reachctl status --json
expect "reachctl status prints the usable servers and the source" output_has '^dns: +.*10.77.0.53%eth0.* \(resolved\)$' inside reachctl status
expect "nobody: busctl reads SupportsDNS true" output_has '^b true$' as_nobody busctl --system get-property "${object[@]}" SupportsDNS
expect "unreachable routes to both servers" inside ip route add unreachable 10.77.0.53/32
expect "(the second)" inside ip route add unreachable 10.77.0.1/32
eventually 10 "no server is usable: SupportsDNS false" output_has '^b false$' inside busctl --system get-property "${object[@]}" SupportsDNS
expect "without a probe, connectivity is limited: a path, but no resolver" output_has '"status":"wired".*"connectivity":"limited"' inside reachctl status --json
expect "reachctl status says none reachable" output_has '^dns: +none reachable of .*10.77.0.53%eth0.* \(resolved\)$' inside reachctl status
expect "the routes removed" inside ip route del unreachable 10.77.0.53/32
expect "(the second)" inside ip route del unreachable 10.77.0.1/32
expect "resolved forgets eth0's servers (resolvectl revert)" inside resolvectl revert eth0
eventually 10 "the path's dns follows: the global server alone, usable again; connectivity no longer limited" \
    output_has '"connectivity":"unknown".*"dns":\{"source":"resolved","servers":\["10.77.0.1"\],"usable":\["10.77.0.1"\]\}' inside reachctl status --json

log "the user namespace: PrivateUsers=identity where systemd has it (257, Debian 13), none before"
systemd_version=$(inside systemctl --version | sed -n '1s/^systemd \([0-9][0-9]*\).*/\1/p')
reachd_userns=$(inside readlink "/proc/$(main_pid)/ns/user")
if [ "${systemd_version:-0}" -ge 257 ]; then
    expect "systemd $systemd_version: the generator's drop-in is in force" \
        output_has 'PrivateUsers=identity' inside systemctl cat reachd.service
    expect "reachd runs in a user namespace of its own" [ "$reachd_userns" != "$(inside readlink /proc/1/ns/user)" ]
else
    expect "systemd $systemd_version: no drop-in, reachd in the system's user namespace" \
        not output_has 'PrivateUsers=identity' inside systemctl cat reachd.service
    expect "no warning about the unit's PrivateUsers= from systemd" \
        not output_has 'PrivateUsers' inside journalctl --no-pager -b _PID=1
fi

log "per-user limits count users: two ordinary users on the private socket"
# Under PrivateUsers=yes both would read as 65534 inside reachd: one budget for all;
# under PrivateUsers=identity (systemd 257) each is still itself.
inside useradd --no-create-home --shell /usr/sbin/nologin reachd-alice
inside useradd --no-create-home --shell /usr/sbin/nologin reachd-bob
alice=$(inside id -u reachd-alice)
as_user() { local user=$1; shift; inside setpriv --reuid="$user" --regid="$user" --clear-groups "$@"; }
since=$(inside date '+%Y-%m-%d %H:%M:%S')
# 40 watchers, 20 s each: more than one user's 32 connections.
as_user reachd-alice bash -c 'for i in $(seq 40); do timeout 20 reachctl watch --json --bus /run/reachd/bus >/dev/null 2>&1 & done; wait' &
hog=$!
eventually 15 "alice's connections past 32 are refused, and the journal names her uid ($alice)" \
    output_has "closed connections of uid $alice: more than 32 connections of one user" inside journalctl --no-pager -u reachd.service --since "$since"
expect "bob, meanwhile: reachctl status is answered by the daemon" output_has '"status":"wired".*"source":"daemon"' \
    as_user reachd-bob reachctl status --json --bus /run/reachd/bus
expect "bob's connection is counted as his own, not as 65534's" \
    not output_has "closed connections of uid (65534|$(inside id -u reachd-bob))" inside journalctl --no-pager -u reachd.service --since "$since"
wait "$hog" 2>/dev/null

log "reload: a pinned TLS host, then a broken config"
make_certificates || fail "test certificates (openssl)"
serve_tls || fail "openssl s_server on the gateway (10.77.0.1:8443)"
serve_probe || fail "the connectivity probe's HTTP server on the gateway (10.77.0.1:8080)"
cp "$work/pki/ca.pem" "$root/etc/reachd/test-ca.pem"
good_config
expect "systemctl reload reachd with a good config succeeds" inside systemctl reload reachd.service
eventually 15 "the pinned host is trusted" output_has '"verdict":"trusted"' inside reachctl trust status --json
expect "the path's trust is ok" output_has '"trust":"ok"' inside reachctl status --json
expect "GET /metrics answers under the sandbox, with the pinned host's verdict" output_has 'reachd_trust_verdict\{host="pinned.test",verdict="trusted"\} 1' scrape
eventually 10 "the probe gets through the sandbox (SO_BINDTODEVICE without capabilities): connectivity full" \
    output_has '"connectivity":"full"' inside reachctl status --json
expect "the probe reached the gateway's server" grep -q '^/generate_204$' "$work/probe-requests.log"
expect "reachctl wait --for online returns at once" inside reachctl wait --for online --timeout 5s
expect "GET /metrics says connectivity full" output_has 'reachd_connectivity\{state="full"\} 1' scrape

log "the network's captive-portal API (RFC 8908), queried by reachd-trust under the sandbox"
serve_capport || fail "the captive-portal API's HTTPS server on the gateway (10.77.0.1:4443)"
cp "$work/pki/capport-ca.pem" "$root/etc/reachd/test-capport-ca.pem"
sed -i 's|^uri = "http://10.77.0.1:8080/generate_204"$|&\ncapport = "https://10.77.0.1:4443/capport"\ncapport-anchors = ["test-capport-ca.pem"]|' "$root/etc/reachd/reachd.toml"
expect "systemctl reload with [connectivity] capport" inside systemctl reload reachd.service
eventually 15 "the API says captive: connectivity portal at the API's page, though the probe answers 204" \
    output_has '"connectivity":"portal","portal":"https://10.77.0.1:4443/login".*"capport":\{"api":"https://10.77.0.1:4443/capport","source":"config","interface":"eth0","captive":true' \
    inside reachctl status --json
expect "reachd-trust asked for application/captive+json through the sandbox" grep -q '^/capport application/captive+json$' "$work/capport-requests.log"
expect "reachctl status says so (env -i, no locale)" output_has '^capport: +captive$' inside reachctl status
expect "GET /metrics: reachd_captive_portal_captive 1" output_has 'reachd_captive_portal_captive\{source="config"\} 1' scrape
printf '{"captive": false, "seconds-remaining": 3600}' > "$work/capport-answer"
eventually 20 "logged in: not captive, the session's end published, connectivity full (the probe's)" \
    output_has '"connectivity":"full".*"captive":false.*"expires":"20' inside reachctl status --json
good_config
expect "reload without capport" inside systemctl reload reachd.service
eventually 10 "no API: capport null" output_has '"capport":null' inside reachctl status --json

log "systemd-networkd's CAPTIVE_PORTAL= (DHCPv4 option 114, dnsmasq on the gateway): what networkd records, and reachd follows"
networkd_version=$(inside networkctl --version | sed -n 's/^systemd \([0-9]*\).*/\1/p')
ip link add name "vn-$id" netns "$gateway" type veth peer name cp0 netns "$leader"
ip -n "$gateway" address add 10.78.0.1/24 dev "vn-$id"
ip -n "$gateway" link set dev "vn-$id" up
# The option sent whether asked for or not: networkd < 254 does not ask, and says nothing of it.
# Unquoted: dnsmasq would send a quoted string's quotes too, which networkd rightly refuses in a URI.
ip netns exec "$gateway" dnsmasq --keep-in-foreground --port=0 --interface="vn-$id" --bind-interfaces --pid-file= \
    --dhcp-range=10.78.0.10,10.78.0.20,1h --dhcp-leasefile="$work/dnsmasq.leases" \
    --dhcp-option-force=114,https://10.77.0.1:4443/capport --log-dhcp --log-facility=- > "$work/dnsmasq.log" 2>&1 < /dev/null &
dhcp_server=$!
mkdir -p "$root/etc/systemd/network"
printf '[Match]\nName=cp0\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n\n[DHCPv4]\nRouteMetric=10\n' \
    > "$root/etc/systemd/network/50-package-test.network"
sed -i 's|^uri = "http://10.77.0.1:8080/generate_204"$|&\ncapport-anchors = ["test-capport-ca.pem"]|' "$root/etc/reachd/reachd.toml"
expect "systemctl reload with the portal's CA" inside systemctl reload reachd.service
expect "systemd-networkd $networkd_version starts" inside systemctl start systemd-networkd.service
cp0=$(inside cat /sys/class/net/cp0/ifindex)
eventually 20 "networkd configures cp0 by DHCP (its link state routable)" output_has '^OPER_STATE=routable' inside cat "/run/systemd/netif/links/$cp0"
nsenter --target "$leader" --net ip route del default via 10.77.0.1 dev eth0
eventually 10 "the path moves to cp0 (networkd's DHCP default route)" output_has '"interface":\{"name":"cp0"' inside reachctl status --json
if [ "${networkd_version:-0}" -ge 254 ]; then
    expect "networkd $networkd_version records the DHCP server's captive portal" \
        output_has '^CAPTIVE_PORTAL=https://10.77.0.1:4443/capport$' inside cat "/run/systemd/netif/links/$cp0"
    eventually 15 "reachd reads it from networkd's link state under the sandbox, and queries the API through cp0" \
        output_has '"capport":\{"api":"https://10.77.0.1:4443/capport","source":"networkd","interface":"cp0","captive":false' \
        inside reachctl status --json
else
    expect "networkd $networkd_version records no captive portal (networkd < 254)" \
        not output_has '^CAPTIVE_PORTAL=' inside cat "/run/systemd/netif/links/$cp0"
    expect "so reachd has no API for cp0, and says so" output_has '"interface":\{"name":"cp0".*"capport":null' inside reachctl status --json
fi
nsenter --target "$leader" --net ip route add default via 10.77.0.1
inside systemctl stop systemd-networkd.service systemd-networkd.socket
rm -f "$root/etc/systemd/network/50-package-test.network"
nsenter --target "$leader" --net ip link delete cp0
kill "$dhcp_server" 2>/dev/null
dhcp_server=
good_config
expect "reload without capport-anchors" inside systemctl reload reachd.service
eventually 10 "back on eth0" output_has '"interface":\{"name":"eth0"' inside reachctl status --json
eventually 15 "and the pinned host trusted again (the reloads' rounds done)" output_has '"trust":"ok"' inside reachctl status --json
eventually 10 "the textfile is written into node_exporter's directory" grep -q '^reachd_path_up 1$' "$root/var/lib/prometheus/node-exporter/reachd.prom"
expect "the textfile is readable by node_exporter (0644), and alone there" output_has '^644 reachd.prom $' \
    bash -c "cd '$root/var/lib/prometheus/node-exporter' && stat -c '%a %n' .[!.]* * 2>/dev/null | tr '\\n' ' '"
reloaded=$(main_pid)
good_config
sed -i 's/^timeout = "3s"$/&\nbogus-key = 1/' "$root/etc/reachd/reachd.toml"
bad_line=$(grep -n '^bogus-key' "$root/etc/reachd/reachd.toml" | cut -d: -f1)
since=$(inside date '+%Y-%m-%d %H:%M:%S')
expect "systemctl reload with a broken config fails" not inside systemctl reload reachd.service
expect "the journal names reachd.toml:$bad_line" output_has "reachd.toml:$bad_line" inside journalctl --no-pager -u reachd.service --since "$since"
expect "systemctl status names reachd.toml:$bad_line" output_has "reachd.toml:$bad_line" inside systemctl status --no-pager --lines=20 reachd.service
expect "the service stays active, the same process" output_has "^$reloaded\$" main_pid
expect "the old config stays in force: the pinned host still checked" output_has '"host":"pinned.test"' inside reachctl trust status --json
expect "and trust still ok" output_has '"trust":"ok"' inside reachctl status --json
good_config
expect "reload with the config mended succeeds" inside systemctl reload reachd.service

log "restarts: kill -9, and a stopped process killed by the watchdog"
before=$(main_pid)
# Minimal Debian has no kill(1) (procps): systemctl kill is what there is.
inside systemctl kill --kill-who=main --signal=KILL reachd.service
eventually 15 "kill -9 of the main process: restarted" restarted "$before"
eventually 10 "after the restart, wired again from the daemon" status_is wired
# The unit's 30 s watchdog, shortened for the test the way an operator would.
mkdir -p "$root/etc/systemd/system/reachd.service.d"
printf '[Service]\nWatchdogSec=2s\n' > "$root/etc/systemd/system/reachd.service.d/test-watchdog.conf"
inside systemctl daemon-reload
inside systemctl restart reachd.service
eventually 10 "restarted with WatchdogSec=2s" state_is reachd.service active
healthy=$(main_pid)
sleep 5
expect "a healthy daemon outlives 5 s of a 2 s watchdog" output_has "^$healthy\$" main_pid
inside systemctl kill --kill-who=main --signal=STOP reachd.service
eventually 20 "SIGSTOP: the watchdog kills it and systemd restarts it" restarted "$healthy"
expect "the journal says it was the watchdog" output_has 'Watchdog timeout' inside journalctl --no-pager -u reachd.service
rm -r "$root/etc/systemd/system/reachd.service.d"
inside systemctl daemon-reload
eventually 10 "wired again" status_is wired
expect "no failure lines in the journal from reachd, reachd-trust or reachctl reload (but the broken config's)" clean_journal
# A measurement, not a check: the installed daemon's memory under systemd.
sleep 2
echo "  info  reachd under systemd, idle with one pinned host: $(inside grep -E '^(VmRSS|VmHWM)' "/proc/$(main_pid)/status" | tr -s ' \t\n' ' ')"

log "boot ordering: reachd-wait-online.service"
printf '[Unit]\nDescription=needs the network\nWants=network-online.target\nAfter=network-online.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c "reachctl status --json > /var/lib/late-probe.json"\n\n[Install]\nWantedBy=multi-user.target\n' \
    > "$root/etc/systemd/system/late-probe.service"
inside systemctl enable --quiet reachd-wait-online.service late-probe.service
inside systemctl reboot
boot || { fail "the container boots again"; exit 1; }
eventually 30 "after the reboot, reachd is active (no network yet)" state_is reachd.service active
sleep 2
expect "without a path, network-online.target waits for reachd-wait-online" state_is reachd-wait-online.service activating
expect "and the unit ordered after it has not started" state_is late-probe.service inactive
plug_in || fail "a veth into the rebooted container"
eventually 20 "with a path, the unit ordered after network-online.target runs" state_is late-probe.service active
expect "and it saw the path wired" grep -q '"status":"wired"' "$root/var/lib/late-probe.json"
eventually 15 "the pinned host is trusted after the reboot" output_has '"verdict":"trusted"' inside reachctl trust status --json
expect "no failure lines in the journal of this boot" clean_journal
inside systemctl disable --quiet late-probe.service reachd-wait-online.service

log "the bus's broker restarted: reachd exits, systemd starts it again, it owns its name again"
before=$(main_pid)
since=$(inside date '+%Y-%m-%d %H:%M:%S')
started=$(date +%s%N)
inside systemctl restart dbus.service
eventually 20 "reachd was restarted after the broker went away" restarted "$before"
eventually 10 "and owns io.reachd.Reachability1 again: busctl reads Status" \
    output_has '^s "wired"$' inside busctl --system get-property io.reachd.Reachability1 /io/reachd/Reachability1 io.reachd.Reachability1 Status
echo "  info  broker restarted: the name owned again $(( ($(date +%s%N) - started) / 1000000 )) ms after systemctl restart dbus (RestartSec=1s)"
expect "its journal says why it exited" output_has 'lost the system bus \(its broker went away\)' \
    inside journalctl --no-pager -u reachd.service --since "$since"
expect "systemd saw exit status 69" output_has 'status=69' inside journalctl --no-pager -u reachd.service --since "$since"

log "NetworkManager compatibility: GLib and Qt apps, and a real NetworkManager"
nm_owner() { inside busctl --system status org.freedesktop.NetworkManager 2>&1 | grep -E '^Unit='; }
owner_is() { [ "$(nm_owner)" = "Unit=$1" ]; }
glib_says() { as_nobody bash -c 'timeout 3 python3 /usr/local/bin/glib-network-monitor.py; true' | head -1; }
qt_says() { as_nobody bash -c 'QT_QPA_PLATFORM=offscreen timeout 5 python3 /usr/local/bin/qt-network-information.py 2>/dev/null; true' | head -1; }
expect "compat off (the default): nobody owns org.freedesktop.NetworkManager" not nm_owner
expect "compat off: GLib falls back to its netlink monitor" output_has '"backend": "GNetworkMonitorNetlink"' glib_says
# Why reachd follows systemd's jobs: a name merely held with replacement allowed still stops NetworkManager.
inside bash -c "python3 -c 'from gi.repository import Gio, GLib; Gio.bus_own_name(Gio.BusType.SYSTEM, \"org.freedesktop.NetworkManager\", Gio.BusNameOwnerFlags.ALLOW_REPLACEMENT, None, None, None); GLib.MainLoop().run()' > /dev/null 2>&1 &"
eventually 10 "a stand-in holds org.freedesktop.NetworkManager, allowing replacement" nm_owner
since=$(inside date '+%Y-%m-%d %H:%M:%S')
expect "then NetworkManager does not start" not inside timeout 60 systemctl start NetworkManager.service
expect "its journal says why (it does not replace, and does not queue)" output_has 'acquire' inside journalctl --no-pager -u NetworkManager.service --since "$since"
inside bash -c 'for p in /proc/[0-9]*; do grep -qa bus_own_name $p/cmdline 2>/dev/null && kill ${p#/proc/}; done; true'
inside systemctl stop NetworkManager.service
inside systemctl reset-failed NetworkManager.service
eventually 10 "the stand-in gone, nobody owns the name" not nm_owner
good_config
# Owning NetworkManager's name comes with the compat policy, which the package ships inactive.
expect "the compat bus policy is installed, inactive" package_has /usr/share/reachd/dbus-1/io.reachd.NetworkManagerCompat.conf
expect "without it, the reachd user may not own org.freedesktop.NetworkManager" \
    not inside setpriv --reuid=reachd --regid=reachd --clear-groups busctl --system call org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus RequestName su org.freedesktop.NetworkManager 4
inside ln -s /usr/share/reachd/dbus-1/io.reachd.NetworkManagerCompat.conf /etc/dbus-1/system.d/
expect "the operator links it and reloads the bus" inside systemctl reload dbus.service
printf '\n[compat]\nnetworkmanager = true\n' >> "$root/etc/reachd/reachd.toml"
expect "systemctl reload with [compat] networkmanager = true" inside systemctl reload reachd.service
eventually 10 "reachd owns org.freedesktop.NetworkManager" owner_is reachd.service
expect "nobody: GLib's GNetworkMonitor is the NetworkManager backend, available, connectivity full" \
    output_has '"backend": "GNetworkMonitorNM", "available": true, "connectivity": "full", "metered": false' glib_says
expect "nobody: Qt's networkmanager backend loads: Online, not behind a portal, Ethernet" \
    output_has '"backend": "networkmanager", "reachability": "Online", "portal": false, "medium": "Ethernet"' qt_says
# Both toolkits as long-running apps of an unprivileged user, following a change.
for client in glib-network-monitor qt-network-information; do
    inside bash -c "QT_QPA_PLATFORM=offscreen setpriv --reuid=nobody --regid=nogroup --clear-groups python3 /usr/local/bin/$client.py > /var/tmp/$client.log 2>/dev/null &"
done
says() { tail -1 "$root/var/tmp/$1.log" | grep -q "$2"; }
eventually 10 "a GLib app running as nobody starts online" says glib-network-monitor '"available": true, "connectivity": "full"'
eventually 10 "a Qt app running as nobody starts online" says qt-network-information '"reachability": "Online"'
nsenter --target "$leader" --net ip route del default
eventually 5 "the default route deleted: the GLib app says unavailable" says glib-network-monitor '"available": false'
eventually 5 "and the Qt app says Disconnected" says qt-network-information '"reachability": "Disconnected"'
nsenter --target "$leader" --net ip route add default via 10.77.0.1
eventually 5 "the route back: the GLib app says full again" says glib-network-monitor '"available": true, "connectivity": "full"'
eventually 5 "and the Qt app says Online" says qt-network-information '"reachability": "Online"'
# No pkill in minimal Debian: bash's kill, for the two clients.
inside bash -c 'for p in /proc/[0-9]*; do grep -qaE "network-(monitor|information).py" $p/cmdline 2>/dev/null && kill ${p#/proc/}; done; true'
expect "nm-online -s (NetworkManager-wait-online's command) returns at once" inside nm-online -s -q -t 5
expect "nm-online returns at once: the path is usable" inside nm-online -q -t 5
expect "nmcli reads the surface through the object manager" output_has '^running:connected:(full|limited|portal|unknown)$' \
    inside nmcli -t -f RUNNING,STATE,CONNECTIVITY general
# A real NetworkManager, started while reachd holds its name: systemd's job comes first, and reachd gives the name up.
since=$(inside date '+%Y-%m-%d %H:%M:%S')
expect "systemctl start NetworkManager succeeds while reachd held the name" inside systemctl start NetworkManager.service
eventually 15 "NetworkManager is active" state_is NetworkManager.service active
expect "and owns its name" owner_is NetworkManager.service
expect "nmcli talks to the real NetworkManager" output_has '^running$' inside nmcli -t -f RUNNING general
expect "NetworkManager's journal has no trouble with its name" not output_has 'acquire|already' inside journalctl --no-pager -u NetworkManager.service -p warning --since "$since"
expect "reachd's journal says it released the name for systemd's job" output_has 'systemd queued a job for NetworkManager.service' \
    inside journalctl --no-pager -u reachd.service --since "$since"
expect "GLib apps now read the real NetworkManager" output_has '"backend": "GNetworkMonitorNM"' glib_says
inside systemctl restart reachd.service
eventually 15 "reachd restarted beside a running NetworkManager" state_is reachd.service active
sleep 2
expect "and leaves NetworkManager's name alone" owner_is NetworkManager.service
expect "systemctl stop NetworkManager" inside systemctl stop NetworkManager.service
eventually 10 "reachd takes the name back" owner_is reachd.service
# Both enabled at boot: NetworkManager's start job is queued with reachd's, and wins.
inside systemctl enable --quiet NetworkManager.service
inside systemctl reboot
boot || { fail "the container boots with NetworkManager enabled"; exit 1; }
eventually 30 "after the reboot, NetworkManager is active" state_is NetworkManager.service active
eventually 10 "and reachd too" state_is reachd.service active
expect "NetworkManager owns its name" owner_is NetworkManager.service
expect "reachd did not take it at boot" not output_has 'owning org.freedesktop.NetworkManager' inside journalctl --no-pager -b -u reachd.service
inside systemctl disable --quiet --now NetworkManager.service
eventually 10 "NetworkManager switched off: reachd owns the name" owner_is reachd.service
plug_in || fail "a veth into the container"
eventually 10 "wired again" status_is wired
good_config
inside systemctl reload reachd.service
eventually 10 "compat off (reload): the name is released" not nm_owner

log "idle memory: reachd beside NetworkManager and systemd-networkd, measured the same way"
# All three at once, one wired interface with a static address, 60 s idle: reachd
# with the package's config (every key commented: the defaults), NetworkManager
# with Debian's config (eth0 unmanaged, as on this test's hosts), systemd-networkd
# managing eth0 with the address it already has.
cp /dev/null "$root/etc/reachd/reachd.toml"
printf '[Match]\nName=eth0\n\n[Network]\nAddress=10.77.0.2/24\nGateway=10.77.0.1\n' > "$root/etc/systemd/network/50-eth0.network"
inside systemctl restart reachd.service
inside systemctl start NetworkManager.service systemd-networkd.service
eventually 20 "reachd, NetworkManager and systemd-networkd are active" \
    bash -c "for unit in reachd NetworkManager systemd-networkd; do [ \$(nsenter --target $leader --all systemctl show --property=ActiveState --value \$unit.service) = active ] || exit 1; done"
sleep 60
# RSS, its anonymous part and PSS (/proc, smaps_rollup), threads, and the unit's exposure.
idle() {
    local pid
    pid=$(inside systemctl show --property=MainPID --value "$1.service")
    inside bash -c "awk '/^(VmRSS|RssAnon|Threads):/ { printf \"%s %s \", \$1, \$2 } /^Pss:/ { printf \"Pss: %s \", \$2 }' /proc/$pid/status /proc/$pid/smaps_rollup; \
        systemd-analyze security $1.service 2>/dev/null | sed -n 's/.*exposure level for .*: \([0-9.]*\).*/exposure: \1/p'"
}
for unit in reachd NetworkManager systemd-networkd; do
    measured=$(idle "$unit")
    printf '  info  idle 60 s, %-17s %s\n' "$unit:" "$measured"
    [ "$unit" = reachd ] && reachd_idle=$measured
done
# Where reachd's RSS is, per mapping (BENCHMARKS.md §11): its binary's code, data and
# relocated data, and the shared libraries.
pid=$(main_pid)
inside awk '/^[0-9a-f]+-/ { name = ($6 ~ /reachd$/) ? "reachd " $2 : ($6 ~ /\.so/ ? "shared libraries" : "other (heap, stacks, anonymous)") }
    /^Rss:/ { rss[name] += $2 } /^Anonymous:/ { anon[name] += $2 }
    END { for (n in rss) printf "  info  reachd idle: %-32s RSS %6d KiB, anonymous %5d KiB\n", n, rss[n], anon[n] }' /proc/$pid/smaps | sort
# And per section of the binary, .rodata by kind of symbol (BENCHMARKS.md §22), read from
# this host: the unit's reachd by its pid here, the symbols from the unstripped build
# the package was made from (same layout), when it is beside the .deb's build.
host_pid=$(for candidate in $(pgrep -x reachd); do
    [ "$(readlink /proc/$candidate/ns/pid)" = "$(readlink /proc/$leader/ns/pid)" ] && echo "$candidate"; done | head -1)
symbols=$(dirname "$0")/../../.build/release/reachd-multicall
[ -f "$symbols" ] || symbols=$root/usr/bin/reachd
"$(dirname "$0")/../../scripts/idle-pages.py" "$host_pid" "$root/usr/bin/reachd" --symbols "$symbols" | sed 's/^/  info  reachd idle pages: /'
# Started just after dpkg wrote its binary, and reachctl and reachd-trust ran from it,
# reachd found all of the binary in the page cache, and the kernel maps the cached
# pages around each fault. At boot, nothing of it is cached yet: the same again
# after dropping the binary's pages from the page cache.
inside systemctl stop reachd.service
python3 -c 'import os, sys; os.posix_fadvise(os.open(sys.argv[1], os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED)' "$root/usr/bin/reachd"
inside systemctl start reachd.service
sleep 60
reachd_cold=$(idle reachd)
printf '  info  idle 60 s, %-17s %s\n' "reachd, cold:" "$reachd_cold"
# reachd lets go of its start-up's pages once start-up settled; a change maps back what
# handling it runs (docs/development.md, "Idle memory"): the figure of a host whose
# network has moved since reachd started.
inside ip route del default via 10.77.0.1
eventually 10 "the default route deleted: unreachable" status_is unreachable
inside ip route replace default via 10.77.0.1
eventually 10 "the default route back: wired" status_is wired
sleep 10
reachd_changed=$(idle reachd)
printf '  info  idle 10 s, %-17s %s\n' "reachd, after a change:" "$reachd_changed"
# The idle goals (BENCHMARKS.md §11), said, not checked, each apart: RSS ≤ 10,240 KiB; and issue
# 22's anonymous ≤ 1,228 KiB, given up for PIE (the relocations of the binary's pointer data are
# about half of it; only a position-dependent binary meets it).
goal() {
    local rss anon verdict anonymous
    rss=$(sed -n 's/.*VmRSS: \([0-9]*\).*/\1/p' <<< "$2")
    anon=$(sed -n 's/.*RssAnon: \([0-9]*\).*/\1/p' <<< "$2")
    [ "$rss" -le 10240 ] && verdict="met" || verdict="NOT met"
    [ "$anon" -le 1228 ] && anonymous="within issue 22's 1,228" || anonymous="over issue 22's 1,228, given up for PIE"
    echo "  info  reachd idle, $1: RSS $rss KiB (goal ≤ 10,240: $verdict), anonymous $anon KiB ($anonymous)"
}
goal "after the install" "$reachd_idle"
goal "cold" "$reachd_cold"
goal "after a change" "$reachd_changed"
inside systemctl stop NetworkManager.service systemd-networkd.service systemd-networkd.socket
rm "$root/etc/systemd/network/50-eth0.network"
good_config

log "upgrade, remove, purge"
before=$(main_pid)
expect "dpkg -i of the package again (an upgrade) succeeds" inside dpkg -i /root/reachd.deb
eventually 15 "the upgrade restarted reachd" restarted "$before"
expect "the edited config was kept" grep -q 'written by package-test.sh' "$root/etc/reachd/reachd.toml"
expect "dpkg -r removes the package" inside dpkg -r reachd
expect "removing stopped the service" state_is reachd.service inactive
expect "the binaries are gone" not test -e "$root/usr/bin/reachd"
expect "the link to the compat bus policy went with them" not test -L "$root/etc/dbus-1/system.d/io.reachd.NetworkManagerCompat.conf"
expect "the config is kept until purge" test -e "$root/etc/reachd/reachd.toml"
expect "dpkg --purge purges it" inside dpkg --purge reachd
for gone in /etc/reachd /var/lib/reachd /lib/systemd/system/reachd.service /usr/share/dbus-1/system.d/io.reachd.Reachability1.conf /usr/libexec/reachd-trust; do
    expect "purged: $gone" not test -e "$root$gone"
done
inside systemctl daemon-reload
expect "systemd no longer knows the service" output_has '^not-found$' inside systemctl show --property=LoadState --value reachd.service

echo
echo "package-test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
