#ifndef REACHD_CTESTSUPPORT_H
#define REACHD_CTESTSUPPORT_H

#include <stdbool.h>

/// Opens /dev/net/tun and attaches a tun device named `name` (IFF_TUN|IFF_NO_PI)
/// in the calling thread's network namespace, creating it if needed.
/// While the returned descriptor stays open the device has carrier.
/// Returns the descriptor, or -1 with errno set.
int reachd_test_open_tun(const char *name);

/// True when this test process, started by an ordinary user, runs in user, mount and network
/// namespaces of its own (entered before main), where it may create network namespaces.
bool reachd_tests_user_namespace(void);

#endif
