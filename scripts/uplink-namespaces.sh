# uplink-namespaces.sh — sourced by scripts/wake-timeline.sh and scripts/wake-footprint.sh:
#
#   make_uplink_namespaces HOST PEER
#
# makes network namespace HOST with an uplink, eth0 (10.1.0.2/24), to namespace PEER
# (10.1.0.1/24 on up0), and a default route through it once the carrier is up. The
# caller deletes both namespaces.
make_uplink_namespaces() {
    local host=$1 peer=$2
    ip netns add "$host"
    ip netns add "$peer"
    ip -n "$host" link set lo up
    ip -n "$host" link add eth0 type veth peer name up0 netns "$peer"
    ip -n "$host" addr add 10.1.0.2/24 dev eth0
    ip -n "$peer" addr add 10.1.0.1/24 dev up0
    ip -n "$host" link set eth0 up
    ip -n "$peer" link set up0 up
    sleep 2 # carrier
    ip -n "$host" route add default via 10.1.0.1
}
