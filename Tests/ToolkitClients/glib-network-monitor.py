#!/usr/bin/python3
"""GLib's GNetworkMonitor as every GTK/GNOME app (and xdg-desktop-portal) uses it.

Prints one JSON line with the monitor's view at start and after every property
notification: which backend GLib chose, network-available, connectivity,
network-metered, and CLOCK_MONOTONIC (to compare with reachd's own signals)."""
import json
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib, GObject  # noqa: E402

monitor = Gio.NetworkMonitor.get_default()


def say(event):
    print(json.dumps({
        "event": event,
        "backend": GObject.type_name(monitor),
        "available": monitor.get_network_available(),
        "connectivity": monitor.get_connectivity().value_nick,
        "metered": monitor.get_network_metered(),
        "clock": time.clock_gettime(time.CLOCK_MONOTONIC),
    }), flush=True)


for name in ("network-available", "connectivity", "network-metered"):
    monitor.connect("notify::" + name, lambda _monitor, spec: say(spec.name))
say("initial")
GLib.MainLoop().run()
