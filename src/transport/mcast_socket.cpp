// SPDX-License-Identifier: BSD-2-Clause
#include "transport/mcast_socket.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "wire/gid.h"

namespace softrdma::transport {
namespace {

constexpr uint16_t kDefaultMcastPort = 4792;
#ifndef IPV6_MULTICAST_ALL
constexpr int IPV6_MULTICAST_ALL = 29;  // Linux 4.20; older glibc headers lack the name
#endif

}  // namespace

uint16_t mcast_port() {
    static const uint16_t port = [] {
        const char *e = std::getenv("SOFTRDMA_MCAST_PORT");
        const long v = e ? std::strtol(e, nullptr, 10) : 0;
        return v > 0 && v < 0xffff ? uint16_t(v) : kDefaultMcastPort;
    }();
    return port;
}

bool gid_is_multicast(const uint8_t g[16]) {
    if (wire::gid_is_v4_mapped(g)) return (g[12] & 0xf0) == 0xe0;
    return g[0] == 0xff;
}

sockaddr_in6 mcast_endpoint(const uint8_t mgid[16], bool loopback_dev) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(mcast_port());
    std::memcpy(&a.sin6_addr, mgid, 16);
    if (loopback_dev && !wire::gid_is_v4_mapped(mgid)) {
        uint32_t h = 2166136261u;  // FNV-1a over the MGID
        for (int i = 0; i < 16; ++i) h = (h ^ mgid[i]) * 16777619u;
        uint8_t *b = a.sin6_addr.s6_addr;
        std::memset(b, 0, 16);
        b[10] = b[11] = 0xff;
        b[12] = 239;
        b[13] = 255;
        b[14] = uint8_t(h >> 8);
        b[15] = uint8_t(h);
    }
    return a;
}

UniqueFd open_mcast_socket(uint16_t port) {
    UniqueFd fd(::socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return fd;
    const int one = 1, zero = 0;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // Without these a socket on the port would also get the groups every other socket of
    // the host joined, and a QP would receive groups it never attached to.
    setsockopt(fd.get(), IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero);
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_MULTICAST_ALL, &zero, sizeof zero);
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    setsockopt(fd.get(), SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    int rcvbuf = 4 << 20;
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    if (::bind(fd.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) return UniqueFd();
    return fd;
}

int mcast_membership(int fd, const sockaddr_in6 &group, int ifindex, bool join) {
    int r;
    if (wire::gid_is_v4_mapped(group.sin6_addr.s6_addr)) {
        ip_mreqn m{};
        std::memcpy(&m.imr_multiaddr, group.sin6_addr.s6_addr + 12, 4);
        m.imr_ifindex = ifindex;
        r = setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m, sizeof m);
    } else {
        ipv6_mreq m{};
        m.ipv6mr_multiaddr = group.sin6_addr;
        m.ipv6mr_interface = unsigned(ifindex);
        r = setsockopt(fd, IPPROTO_IPV6, join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP, &m,
                       sizeof m);
    }
    return r == 0 ? 0 : errno;
}

}  // namespace softrdma::transport
