#!/usr/bin/python3
"""Qt's QNetworkInformation with the networkmanager backend, as every Qt 6 / KDE app uses it.

Prints one JSON line with its view at start and after every change signal:
reachability, isBehindCaptivePortal, transportMedium, isMetered, and
CLOCK_MONOTONIC. Exits 3 when the backend does not load."""
import json
import sys
import time

from PyQt6.QtCore import QCoreApplication
from PyQt6.QtNetwork import QNetworkInformation

app = QCoreApplication(sys.argv)
if not QNetworkInformation.loadBackendByName("networkmanager"):
    print(json.dumps({"event": "no-backend"}), flush=True)
    sys.exit(3)
info = QNetworkInformation.instance()


def say(event):
    print(json.dumps({
        "event": event,
        "backend": info.backendName(),
        "reachability": info.reachability().name,
        "portal": info.isBehindCaptivePortal(),
        "medium": info.transportMedium().name,
        "metered": info.isMetered(),
        "clock": time.clock_gettime(time.CLOCK_MONOTONIC),
    }), flush=True)


info.reachabilityChanged.connect(lambda _value: say("reachability"))
info.isBehindCaptivePortalChanged.connect(lambda _value: say("portal"))
# PyQt6 6.4 names these two signals with a signature Qt 6.4's moc does not
# export ("No such signal"): their values are still printed on every line.
for signal, event in ((info.transportMediumChanged, "medium"), (info.isMeteredChanged, "metered")):
    try:
        signal.connect(lambda _value, event=event: say(event))
    except TypeError:
        pass
say("initial")
sys.exit(app.exec())
