// SPDX-License-Identifier: BSD-2-Clause
#include "cm/cm_neigh.h"

#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"

namespace softrdma::cm {
namespace {

struct Route {
    bool ok = false;
    bool local = false;
    int oif = 0;
    int family = AF_INET;
    uint8_t hop[16] = {};  // gateway, or the destination when on-link
    size_t hop_len = 0;
};

// One request/answer on a fresh NETLINK_ROUTE socket.
ssize_t nl_query(const void *req, size_t len, char *buf, size_t cap) {
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (!fd) return -1;
    timeval tv{1, 0};
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_nl k{};
    k.nl_family = AF_NETLINK;
    if (::sendto(fd.get(), req, len, 0, reinterpret_cast<sockaddr *>(&k), sizeof k) < 0) return -1;
    return ::recv(fd.get(), buf, cap, 0);
}

Route route_to(const sockaddr *dst) {
    Route r;
    struct {
        nlmsghdr h;
        rtmsg m;
        char attrs[64];
    } req{};
    const bool v4 = dst->sa_family == AF_INET;
    const void *addr =
        v4 ? static_cast<const void *>(&reinterpret_cast<const sockaddr_in *>(dst)->sin_addr)
           : static_cast<const void *>(&reinterpret_cast<const sockaddr_in6 *>(dst)->sin6_addr);
    const size_t alen = v4 ? 4 : 16;
    req.h.nlmsg_type = RTM_GETROUTE;
    req.h.nlmsg_flags = NLM_F_REQUEST;
    req.m.rtm_family = uint8_t(dst->sa_family);
    req.m.rtm_dst_len = uint8_t(alen * 8);
    auto *rta = reinterpret_cast<rtattr *>(req.attrs);
    rta->rta_type = RTA_DST;
    rta->rta_len = uint16_t(RTA_LENGTH(alen));
    std::memcpy(RTA_DATA(rta), addr, alen);
    req.h.nlmsg_len = uint32_t(NLMSG_LENGTH(sizeof(rtmsg)) + RTA_ALIGN(rta->rta_len));
    alignas(nlmsghdr) char buf[8192];
    const ssize_t n = nl_query(&req, req.h.nlmsg_len, buf, sizeof buf);
    if (n <= 0) return r;
    auto *h = reinterpret_cast<nlmsghdr *>(buf);
    if (!NLMSG_OK(h, size_t(n)) || h->nlmsg_type != RTM_NEWROUTE) return r;
    auto *m = static_cast<rtmsg *>(NLMSG_DATA(h));
    r.ok = true;
    r.family = dst->sa_family;
    r.local = m->rtm_type == RTN_LOCAL;
    std::memcpy(r.hop, addr, alen);
    r.hop_len = alen;
    int len = int(RTM_PAYLOAD(h));
    for (auto *a = RTM_RTA(m); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == RTA_OIF) r.oif = *static_cast<int *>(RTA_DATA(a));
        if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) == alen)
            std::memcpy(r.hop, RTA_DATA(a), alen);
    }
    return r;
}

}  // namespace

NeighState next_hop_state(const sockaddr *dst) {
    const Route r = route_to(dst);
    if (!r.ok) return NeighState::kFailed;
    if (r.local) return NeighState::kResolved;
    struct {
        nlmsghdr h;
        ndmsg m;
        char attrs[64];
    } req{};
    req.h.nlmsg_type = RTM_GETNEIGH;
    req.h.nlmsg_flags = NLM_F_REQUEST;
    req.m.ndm_family = uint8_t(r.family);
    req.m.ndm_ifindex = r.oif;
    auto *rta = reinterpret_cast<rtattr *>(req.attrs);
    rta->rta_type = NDA_DST;
    rta->rta_len = uint16_t(RTA_LENGTH(r.hop_len));
    std::memcpy(RTA_DATA(rta), r.hop, r.hop_len);
    req.h.nlmsg_len = uint32_t(NLMSG_LENGTH(sizeof(ndmsg)) + RTA_ALIGN(rta->rta_len));
    alignas(nlmsghdr) char buf[4096];
    const ssize_t n = nl_query(&req, req.h.nlmsg_len, buf, sizeof buf);
    if (n <= 0) return NeighState::kPending;
    auto *h = reinterpret_cast<nlmsghdr *>(buf);
    if (!NLMSG_OK(h, size_t(n))) return NeighState::kPending;
    if (h->nlmsg_type == NLMSG_ERROR) {
        // No entry (yet), or an interface that needs no neighbours (e.g. a point-to-point
        // link): the latter reports EOPNOTSUPP/EINVAL.
        const auto *e = static_cast<nlmsgerr *>(NLMSG_DATA(h));
        return e->error == -ENOENT ? NeighState::kPending : NeighState::kResolved;
    }
    if (h->nlmsg_type != RTM_NEWNEIGH) return NeighState::kPending;
    const auto *m = static_cast<ndmsg *>(NLMSG_DATA(h));
    if (m->ndm_state &
        (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP))
        return NeighState::kResolved;
    if (m->ndm_state & NUD_FAILED) return NeighState::kFailed;
    return NeighState::kPending;
}

}  // namespace softrdma::cm
