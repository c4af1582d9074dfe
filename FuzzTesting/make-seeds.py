#!/usr/bin/env python3
"""Writes the seed corpora of FuzzTesting/Corpus (committed; re-run to refresh).

Certificates come from openssl, netlink datagrams from the running kernel (an
rtnetlink dump of links, addresses, routes and rules, and a route lookup, read
with a raw AF_NETLINK socket) and from the router-advertisement options it passes
on, reports from the shapes reachd-trust writes.
Run as any user from the repository root: python3 FuzzTesting/make-seeds.py
"""
import base64, hashlib, json, os, socket, struct, subprocess, tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Corpus")


def seed(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as out:
        out.write(data if isinstance(data, bytes) else data.encode())


def openssl(*args, data=None):
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True).stdout


# --- configs: the TOML reader and the schema --------------------------------
CONFIGS = {
    "example.toml": open(os.path.join(os.path.dirname(ROOT), "..", "systemd", "reachd.toml")).read(),
    "monitor.toml": """[monitor]
probe-ipv4 = "192.0.2.1"
probe-ipv6 = "2001:db8::1"
ignore = ["docker*", "veth*"]
metered = ["usb0"]

[monitor.kind]
usb0 = "cellular"
"wwan*" = 'cellular'
""",
    "trust.toml": """[trust]
recheck = "both"
interval = "6h"
timeout = "5s"
reports = "/var/lib/reachd/reports"

[[trust.host]]
match = "api.example.com"
port = 8443
connect = "198.51.100.7"
mode = "public-key"
enforce = true
pins = ["sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", 'sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=']
expires = 2027-06-30
min-pins = 2
revocation = "ocsp-soft"
tls = "ats"
report-uri = ["https://collector.example.net/pins", "http://[2001:db8::5]:8080/r"]

[[trust.host]]
match = "**.example.org"
mode = "certificate"
certificates = ["pins/api.der", "/etc/reachd/bundle.pem"]
accept-self-signed = true
validate-host = false
anchors = ["anchors/"]
""",
    "syntax.toml": '''# every kind of value the reader knows
title = "T\\u00e9st \\"quoted\\" \\n"
literal = 'C:\\path'
multi = """
line one \\
  continued"""
multiliteral = \'\'\'raw
text\'\'\'
int = +99_000
hex = 0xDEAD_beef
oct = 0o755
bin = 0b1101
float = -6.02e+23
special = [inf, -inf, nan]
date = 1979-05-27
datetime = 1979-05-27T07:32:00.999-07:00
local = 1979-05-27T07:32:00
time = 07:32:00
inline = { a = 1, "b.c" = [true, false], d = { e = [] } }
dotted.key.path = 1
[a."quoted.key"]
x = [[1, 2], ["a", 'b'], ]
[[array.of.tables]]
[[array.of.tables]]
n = 2
''',
}
for name, text in CONFIGS.items():
    seed("toml", name, text)
    seed("config", name, text)

# --- certificates and pins ----------------------------------------------------
with tempfile.TemporaryDirectory() as work:
    key, cert = os.path.join(work, "k.pem"), os.path.join(work, "c.pem")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
            "-out", cert, "-days", "3650", "-subj", "/CN=api.example.com",
            "-addext", "subjectAltName=DNS:api.example.com,IP:192.0.2.7", "-addext", "nameConstraints=critical,permitted;DNS:example.com")
    pem = open(cert, "rb").read()
    der = openssl("x509", "-in", cert, "-outform", "DER")
    rkey, rcert = os.path.join(work, "rk.pem"), os.path.join(work, "rc.pem")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", rkey, "-out", rcert, "-days", "3650",
            "-subj", "/C=XX/O=reachd fuzz/CN=Root")
    rsa_pem = open(rcert, "rb").read()
    seed("certificates", "ec.pem", pem)
    seed("certificates", "ec.der", der)
    seed("certificates", "bundle.pem", b"# a bundle\n" + pem + b"\n" + rsa_pem)
    seed("certificates", "key.pem", open(key, "rb").read())
    spki = openssl("x509", "-in", cert, "-pubkey", "-noout")
    spki_der = openssl("pkey", "-pubin", "-outform", "DER", data=spki)
    pin = base64.b64encode(hashlib.sha256(spki_der).digest()).decode()
    seed("pin", "sha256", f"sha256/{pin}")
    seed("pin", "curl", f"sha256//{pin}")
    seed("pin", "hpkp", f'pin-sha256="{pin}"')
    seed("pin", "bare", pin)
    seed("pin", "slash", "sha256//" + "/" + "A" * 42 + "=")

# --- helper messages --------------------------------------------------------------
leaf = pem.decode()
report = {
    "date-time": "2026-11-22T10:00:00Z", "hostname": "api.example.com", "port": 443,
    "noted-hostname": "api.example.com", "include-subdomains": False, "enforce-pinning": True,
    "served-certificate-chain": [leaf], "validated-certificate-chain": [],
    "known-pins": [f'pin-sha256="{pin}"'], "validation-result": "pin-mismatch",
    "known-pins-expiration-date": "2027-06-30", "path": {"status": "wired", "interface": "eth0"},
}
host = {"host": "api.example.com", "port": 443, "pattern": "api.example.com", "verdict": "pin-mismatch",
        "reason": "no pin matches", "enforced": True, "tls-version": "TLSv1.3", "presented-pins": [f"sha256/{pin}"],
        "checked-at": "2026-11-22T10:00:00Z"}
seed("helper-messages", "summary.json", json.dumps({"recheck": "on-change", "interval": 21600, "hosts": 2, "reportsPending": 1}))
seed("helper-messages", "round.json", json.dumps({"overall": "compromised", "hosts": [host],
                                                   "reports": [json.dumps(report)], "warnings": ["x"], "reportsPending": 1,
                                                   "pinFailures": ["api.example.com"], "pinFailuresBehindPortal": [],
                                                   "evicted": []}))
seed("helper-messages", "delivery.json", json.dumps({"delivered": 1, "dropped": 0, "reportsPending": 2, "warnings": []}))
seed("helper-messages", "report.json", json.dumps(report))

# --- the report outbox ----------------------------------------------------------------
seed("report-spool", "entry.json", json.dumps({"collectors": ["https://collector.example.net/pins"], "report": report}, sort_keys=True))
seed("report-spool", "two.json", json.dumps({"collectors": ["http://127.0.0.1:9/a", "https://[::1]/b"],
                                              "report": dict(report, **{"known-pins-expiration-date": None})}))
seed("report-spool", "empty.json", json.dumps({"collectors": [], "report": report}))

# --- resolv.conf, as resolvconf, NetworkManager and systemd-resolved write it ----------------
seed("resolv-conf", "plain.conf", "# Generated by NetworkManager\nsearch example.com\nnameserver 192.0.2.53\nnameserver 2001:db8::53\n")
seed("resolv-conf", "stub.conf", "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n")
seed("resolv-conf", "zones.conf", "nameserver fe80::1%eth0\nnameserver fe80::2%3\nnameserver\t10.0.0.1 # trailing\noptions rotate timeout:1\n")

# --- captive-portal API documents (RFC 8908), as portals serve them -------------------------
seed("capport", "full.json", json.dumps({"captive": False, "user-portal-url": "https://example.org/portal.html",
                                         "venue-info-url": "https://flight.example.com/entertainment", "seconds-remaining": 326,
                                         "bytes-remaining": 65536, "can-extend-session": True}))
seed("capport", "captive.json", '{"captive": true, "user-portal-url": "https://example.org/portal.html"}')
seed("capport", "refused.json", '{"captive": true, "seconds-remaining": -1, "venue-info-url": "http://x"}')
seed("capport", "uspot.json", '{"captive":false,"user-portal-url":"https://10.0.0.1/hotspot","can-extend-session":false,"seconds-remaining":3599.5}')


# --- path and interface documents, as reachd writes them (docs/reachctl.md) ------------------
eth0 = {"name": "eth0", "index": 2, "kind": "ethernet"}
eth0_state = dict(eth0, operstate="up", up=True, carrier=True, addresses=["192.0.2.10/24"], connectivity=None)
route = {"destination": "198.41.0.4", "status": "wired", "reason": None, "interface": "eth0", "gateway": "192.0.2.1",
         "source": "192.0.2.10", "nat64": None}
path = {"status": "wired", "reason": None, "interface": eth0, "gateway": "192.0.2.1", "ipv4": True, "ipv6": False,
        "expensive": False, "vpn": None, "interfaces": [eth0_state], "trust": "ok", "connectivity": "full", "portal": None,
        "initial": False, "since": "2026-11-22T10:00:00Z", "source": "daemon", "destination": None, "routes": [route],
        "dns": None, "capport": None, "ipv4-via": "native", "clat": None, "nat64": None, "better-way-out": None}
seed("documents", "path.json", json.dumps(path, separators=(",", ":"), ensure_ascii=False))
seed("documents", "path-full.json", json.dumps(dict(
    path, vpn={"name": "tun0", "index": 9, "kind": "tunnel"}, clat={"name": "clat", "index": 7, "kind": "tunnel"},
    connectivity="portal", portal="https://portal.example/login", destination="quote\" back\\slash \u0001 tab\t é😀",
    interfaces=[eth0_state, {"name": "wlan0", "index": 3, "kind": "wifi", "operstate": "dormant", "up": True, "carrier": False,
                             "addresses": [], "connectivity": None}],
    routes=[route, dict(route, destination="2001:db8::1", status="unreachable", reason="no-route", interface=None,
                        gateway=None, source=None, nat64="64:ff9b::/96")],
    dns={"source": "resolv.conf", "servers": ["192.0.2.53", "2001:db8::53"], "usable": ["192.0.2.53"]},
    capport={"api": "https://portal.example/api", "source": "networkd", "interface": "eth0", "captive": True,
             "user-portal-url": "https://portal.example/login", "venue-info-url": None, "expires": "2026-11-22T11:00:00Z",
             "bytes-remaining": 9007199254740993, "can-extend-session": False, "error": None},
    nat64={"prefix": "64:ff9b::/96", "source": "router-advertisement", "interface": "eth0", "lifetime": 1800},
    **{"ipv4-via": "clat"}), separators=(",", ":")))
seed("documents", "unreachable.json", json.dumps(dict(path, status="unreachable", reason="no-carrier", interface=None,
                                                      interfaces=[]), separators=(",", ":")))
change = dict(eth0_state, master="br0", available=True, removed=False, initial=False)
del change["connectivity"]
seed("documents", "interface.json", json.dumps(change, separators=(",", ":")))
seed("documents", "interfaces.json", json.dumps([change, dict(change, name="veth1", index=40, kind="veth")], separators=(",", ":")))


def nduseropt(option, ifindex=2, router=socket.inet_pton(socket.AF_INET6, "fe80::1")):
    """An RTM_NEWNDUSEROPT message as the kernel sends it: struct nduseroptmsg, the option, NDUSEROPT_SRCADDR."""
    body = struct.pack("=BxHiBBxxI", socket.AF_INET6, len(option), ifindex, 134, 0, 0) + option + struct.pack("=HH", 20, 1) + router
    return struct.pack("=IHHII", 16 + len(body), 68, 0, 0, 0) + body


uri = b"https://capport.example/api"
units = (2 + len(uri) + 7) // 8
seed("netlink", "nduseropt-captive-portal", nduseropt(bytes([37, units]) + uri + b"\0" * (units * 8 - 2 - len(uri))))
seed("netlink", "nduseropt-rdnss", nduseropt(bytes([25, 3, 0, 0, 0, 0, 0, 60]) + socket.inet_pton(socket.AF_INET6, "2001:db8::53")))
# PREF64 (RFC 8781): 64:ff9b::/96 for 600 s (scaled lifetime 75, prefix length code 0).
seed("netlink", "nduseropt-pref64", nduseropt(bytes([38, 2]) + struct.pack("!H", 600) + socket.inet_pton(socket.AF_INET6, "64:ff9b::")[:12]))

# --- rtnetlink datagrams from this kernel -------------------------------------------------
NLM_F_REQUEST, NLM_F_DUMP = 1, 0x300
RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE, RTM_GETRULE = 18, 22, 26, 34


def datagrams(kind, payload, flags=NLM_F_REQUEST | NLM_F_DUMP, attributes=b""):
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        body = payload + attributes
        sock.send(struct.pack("=IHHII", 16 + len(body), kind, flags, 1, 0) + body)
        out = []
        while True:
            data = sock.recv(65536)
            out.append(data)
            offset, kinds = 0, []
            while offset + 16 <= len(data):
                length, kind_seen = struct.unpack_from("=IH", data, offset)
                kinds.append(kind_seen)
                offset += max(16, (length + 3) & ~3)
            if 2 in kinds or 3 in kinds or not flags & NLM_F_DUMP:  # NLMSG_ERROR, NLMSG_DONE, or one answer
                return out


count = 0
for kind, payload in [(RTM_GETLINK, struct.pack("=BxHiII", 0, 0, 0, 0, 0)),
                      (RTM_GETADDR, struct.pack("=BBBBI", 0, 0, 0, 0, 0)),
                      (RTM_GETROUTE, struct.pack("=BBBBBBBBI", 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                      (RTM_GETRULE, struct.pack("=BBBBBBBBI", 2, 0, 0, 0, 0, 0, 0, 0, 0))]:
    for data in datagrams(kind, payload):
        seed("netlink", f"dump-{kind}-{count}", data)
        count += 1
# A route lookup: RTM_GETROUTE for 127.0.0.1 (RTA_DST = 1).
lookup = struct.pack("=BBBBBBBBI", 2, 32, 0, 0, 0, 0, 0, 0, 0) + struct.pack("=HH4s", 8, 1, socket.inet_aton("127.0.0.1"))
for data in datagrams(RTM_GETROUTE, lookup, flags=NLM_F_REQUEST):
    seed("netlink", "lookup", data)
