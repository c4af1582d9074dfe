// The Linux calls Swift cannot reach: those declared only under _GNU_SOURCE
// (setns, ppoll, pipe2, accept4, struct ucred, pthread_setname_np), which Glibc's module map leaves out,
// sys/timex.h, which it does not include, and pidfd_open, which glibc 2.36 wraps
// only in sys/pidfd.h.
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>
#include "CLinuxShim.h"

int reachd_enter_network_namespace(int fd) {
    return setns(fd, CLONE_NEWNET);
}

int reachd_poll(struct pollfd *descriptors, nfds_t count, int64_t timeout_nanoseconds) {
    if (timeout_nanoseconds < 0) return ppoll(descriptors, count, NULL, NULL);
    struct timespec timeout = {
        .tv_sec = timeout_nanoseconds / 1000000000,
        .tv_nsec = timeout_nanoseconds % 1000000000,
    };
    return ppoll(descriptors, count, &timeout, NULL);
}

int reachd_pipe(int ends[2]) {
    return pipe2(ends, O_CLOEXEC | O_NONBLOCK);
}

int reachd_accept(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

int reachd_peer_uid(int socket, uid_t *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    if (length != sizeof credentials) return -1;
    *uid = credentials.uid;
    return 0;
}

int reachd_kernel_clock_synchronized(void) {
    struct timex state = {0};
    int result = adjtimex(&state);
    return result >= 0 && result != TIME_ERROR && !(state.status & STA_UNSYNC);
}

int reachd_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int reachd_name_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

// Defined in a program linked with CWakeLines; null in any other (a weak reference).
extern void reachd_wake_lines_load(void) __attribute__((weak));

void reachd_touch_wake_lines(void) {
    if (reachd_wake_lines_load) reachd_wake_lines_load();
}
