#define _GNU_SOURCE
#include <sched.h>
#include "CNetlinkShim.h"

int reachd_enter_network_namespace(int fd) {
    return setns(fd, CLONE_NEWNET);
}
