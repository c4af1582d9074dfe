#ifndef REACHD_CNETLINKSHIM_H
#define REACHD_CNETLINKSHIM_H

/// Moves the calling thread into the network namespace behind `fd`.
/// Returns 0, or -1 with errno set. Call it only on a thread that is
/// dedicated to the namespace: the thread never comes back.
int reachd_enter_network_namespace(int fd);

#include <poll.h>
#include <stdint.h>

/// ppoll with a timeout in nanoseconds (negative: none), for sub-millisecond
/// waits. Returns what ppoll returns.
int reachd_poll(struct pollfd *descriptors, nfds_t count, int64_t timeout_nanoseconds);

#endif
