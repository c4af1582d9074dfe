#define _GNU_SOURCE
#include <sched.h>
#include <poll.h>
#include <time.h>
#include "CNetlinkShim.h"

int reachd_poll(struct pollfd *descriptors, nfds_t count, int64_t timeout_nanoseconds) {
    if (timeout_nanoseconds < 0) return ppoll(descriptors, count, NULL, NULL);
    struct timespec timeout = {
        .tv_sec = timeout_nanoseconds / 1000000000,
        .tv_nsec = timeout_nanoseconds % 1000000000,
    };
    return ppoll(descriptors, count, &timeout, NULL);
}

int reachd_enter_network_namespace(int fd) {
    return setns(fd, CLONE_NEWNET);
}
