#define _GNU_SOURCE
#include <poll.h>
#include <time.h>
#include "CSocketsShim.h"

int reachd_poll(struct pollfd *descriptors, nfds_t count, int64_t timeout_nanoseconds) {
    if (timeout_nanoseconds < 0) return ppoll(descriptors, count, NULL, NULL);
    struct timespec timeout = {
        .tv_sec = timeout_nanoseconds / 1000000000,
        .tv_nsec = timeout_nanoseconds % 1000000000,
    };
    return ppoll(descriptors, count, &timeout, NULL);
}

#include <sys/timex.h>

int reachd_kernel_clock_synchronized(void) {
    struct timex state = {0};
    int result = adjtimex(&state);
    return result >= 0 && result != TIME_ERROR && !(state.status & STA_UNSYNC);
}
