// SPDX-License-Identifier: BSD-2-Clause
// Multicast groups over IP multicast: where a group's datagrams go and the sockets that
// receive them. A multicast GID is the group's IP address (RoCE v2: ::ffff:a.b.c.d for IPv4).
#pragma once
#include <netinet/in.h>

#include <cstdint>

#include "common/unique_fd.h"

namespace softrdma::transport {

// Every group's datagrams go to this UDP port (RoCE v2 uses 4791 for everything; a port of
// our own keeps a real RoCE stack on the same host undisturbed). SOFTRDMA_MCAST_PORT overrides.
uint16_t mcast_port();

// True for an IPv4-mapped 224.0.0.0/4 address and for ff00::/8.
bool gid_is_multicast(const uint8_t gid[16]);

// The IP group and port that carry `mgid` on an interface. Linux does not route IPv6
// multicast over the loopback device, so there an IPv6 group rides the IPv4 group in
// 239.255.0.0/16 chosen by hashing the MGID (receivers map it back to the MGID they attached).
sockaddr_in6 mcast_endpoint(const uint8_t mgid[16], bool loopback_dev);

// A dual-stack UDP socket on the group port that receives only the groups it joins itself
// (IP_MULTICAST_ALL off) and reports each datagram's destination (IPV6_PKTINFO). Several
// QPs and processes share the port (SO_REUSEADDR): the kernel gives each a copy.
UniqueFd open_mcast_socket(uint16_t port);

// Joins (or leaves) `group` on interface `ifindex`. Returns 0 or an errno.
int mcast_membership(int fd, const sockaddr_in6 &group, int ifindex, bool join);

}  // namespace softrdma::transport
