#ifndef REACHD_CLINUXSHIM_H
#define REACHD_CLINUXSHIM_H

#include <malloc.h>
#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

/// Moves the calling thread into the network namespace behind `fd` (setns).
/// Returns 0, or -1 with errno set. Call it only on a thread that is
/// dedicated to the namespace: the thread never comes back.
int reachd_enter_network_namespace(int fd);

/// ppoll with a timeout in nanoseconds (negative: none), for sub-millisecond
/// waits. Returns what ppoll returns.
int reachd_poll(struct pollfd *descriptors, nfds_t count, int64_t timeout_nanoseconds);

/// pipe2: both ends close-on-exec and non-blocking from the start.
/// Returns 0, or -1 with errno set.
int reachd_pipe(int ends[2]);

/// accept4 of a connection, close-on-exec and non-blocking from the start.
/// Returns the descriptor, or -1 with errno set.
int reachd_accept(int listener);

/// The user at the other end of a Unix socket (SO_PEERCRED) in `*uid`.
/// Returns 0, or -1 when the kernel does not say.
int reachd_peer_uid(int socket, uid_t *uid);

/// 1 when the kernel says the clock is synchronised (adjtimex: no STA_UNSYNC,
/// which chrony, ntpd and systemd-timesyncd clear), 0 when not or unknown.
int reachd_kernel_clock_synchronized(void);

/// A descriptor that becomes readable when process `pid` (a child not yet reaped)
/// exits: pidfd_open(2), close-on-exec. Returns it, or -1 with errno set.
int reachd_pidfd_open(pid_t pid);

/// Names the calling thread (at most 15 bytes: longer is refused with ERANGE).
/// Returns 0, or an error number.
int reachd_name_thread(const char *name);

/// Loads the lines of code and static data a change's wake-up touches, all at
/// once, in a program that carries their list (CWakeLines); does nothing in any
/// other, such as an app using the library.
void reachd_touch_wake_lines(void);

#endif
