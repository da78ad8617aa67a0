// SPDX-License-Identifier: BSD-2-Clause
#include "transport/packet_socket.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace softrdma::transport {
namespace {

constexpr int kRcvBuf = 2 << 20;
#ifndef PACKET_IGNORE_OUTGOING
constexpr int PACKET_IGNORE_OUTGOING = 23;  // Linux 4.20
#endif

}  // namespace

UniqueFd open_packet_socket(int ifindex, bool loopback) {
    // Protocol 0 at creation: nothing is queued before the socket is bound to its interface.
    UniqueFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return fd;
    int one = 1;
    setsockopt(fd.get(), SOL_PACKET, PACKET_AUXDATA, &one, sizeof one);
    if (loopback) setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    int rcvbuf = kRcvBuf;
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = ifindex;
    if (::bind(fd.get(), reinterpret_cast<sockaddr *>(&sll), sizeof sll) < 0) return UniqueFd();
    return fd;
}

bool send_frame(int fd, int ifindex, const iovec *iov, int iovcnt) {
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = ifindex;
    msghdr m{};
    m.msg_name = &to;
    m.msg_namelen = sizeof to;
    m.msg_iov = const_cast<iovec *>(iov);
    m.msg_iovlen = size_t(iovcnt);
    return ::sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
}

long recv_frame(int fd, uint8_t *buf, size_t cap, size_t &start, bool &outgoing) {
    // The MAC addresses land at buf+4 and the rest right behind them at buf+16: without a
    // tag the frame is whole from buf+4; with one, the addresses move 4 bytes down and the
    // tag goes between.
    constexpr size_t kMacs = 12;
    if (cap < kMacs + 8) {
        errno = EINVAL;
        return -1;
    }
    iovec iov[2] = {{buf + 4, kMacs}, {buf + 4 + kMacs, cap - 4 - kMacs}};
    sockaddr_ll from{};
    alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(tpacket_auxdata))];
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof from;
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    const ssize_t n = ::recvmsg(fd, &m, MSG_DONTWAIT);
    if (n < 0) return -1;
    outgoing = from.sll_pkttype == PACKET_OUTGOING;
    start = 4;
    size_t len = size_t(n);
    for (cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA) continue;
        tpacket_auxdata aux;
        std::memcpy(&aux, CMSG_DATA(c), sizeof aux);
        if (!(aux.tp_status & TP_STATUS_VLAN_VALID) || len < kMacs) continue;
        const uint16_t tpid =
            (aux.tp_status & TP_STATUS_VLAN_TPID_VALID) ? aux.tp_vlan_tpid : ETH_P_8021Q;
        std::memmove(buf, buf + 4, kMacs);
        buf[12] = uint8_t(tpid >> 8);
        buf[13] = uint8_t(tpid);
        buf[14] = uint8_t(aux.tp_vlan_tci >> 8);
        buf[15] = uint8_t(aux.tp_vlan_tci);
        start = 0;
        len += 4;
    }
    return long(len);
}

uint32_t interface_mtu(int ifindex) {
    ifreq r{};
    if (!if_indextoname(unsigned(ifindex), r.ifr_name)) return 1500;
    UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s || ::ioctl(s.get(), SIOCGIFMTU, &r) < 0) return 1500;
    return uint32_t(r.ifr_mtu);
}

}  // namespace softrdma::transport
