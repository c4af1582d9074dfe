#ifndef REACHD_CNETLINK_H
#define REACHD_CNETLINK_H

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/socket.h>
#include <netlink/object.h>
#include <netlink/route/rtnl.h>
#include <netlink/route/link.h>
#include <netlink/route/addr.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>

#endif
