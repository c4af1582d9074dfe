#ifndef REACHD_CNETLINKSHIM_H
#define REACHD_CNETLINKSHIM_H

/// Moves the calling thread into the network namespace behind `fd`.
/// Returns 0, or -1 with errno set. Call it only on a thread that is
/// dedicated to the namespace: the thread never comes back.
int reachd_enter_network_namespace(int fd);

#endif
