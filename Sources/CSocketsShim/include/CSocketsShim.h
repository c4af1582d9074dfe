#ifndef REACHD_CSOCKETSSHIM_H
#define REACHD_CSOCKETSSHIM_H

#include <poll.h>
#include <stdint.h>

/// ppoll with a timeout in nanoseconds (negative: none), for sub-millisecond
/// waits. Returns what ppoll returns. (ppoll needs _GNU_SOURCE: a .c file.)
int reachd_poll(struct pollfd *descriptors, nfds_t count, int64_t timeout_nanoseconds);

/// 1 when the kernel says the clock is synchronised (adjtimex: no STA_UNSYNC,
/// which chrony, ntpd and systemd-timesyncd clear), 0 when not or unknown.
/// (sys/timex.h is not in Swift's Glibc module.)
int reachd_kernel_clock_synchronized(void);

#endif
