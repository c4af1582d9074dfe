#ifndef REACHD_CTESTSUPPORT_H
#define REACHD_CTESTSUPPORT_H

/// Opens /dev/net/tun and attaches a tun device named `name` (IFF_TUN|IFF_NO_PI)
/// in the calling thread's network namespace, creating it if needed.
/// While the returned descriptor stays open the device has carrier.
/// Returns the descriptor, or -1 with errno set.
int reachd_test_open_tun(const char *name);

#endif
