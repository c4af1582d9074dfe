#ifndef REACHD_CNETLINK_H
#define REACHD_CNETLINK_H

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/socket.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>

#endif
