// SPDX-License-Identifier: BSD-2-Clause
// Multicast for UD QPs: a group is an IP multicast group (transport/mcast_socket.h). An
// attached QP joins it on a socket of its own on the group port; the kernel hands every
// member socket, in every process, its own copy of each datagram.
#include <arpa/inet.h>
#include <sys/epoll.h>

#include <cerrno>
#include <cstring>

#include "transport/mcast_socket.h"
#include "common/log.h"
#include "verbs/ah.h"
#include "verbs/context.h"
#include "verbs/device.h"
#include "verbs/qp.h"
#include "wire/gid.h"

namespace softrdma::verbs {
namespace {

// The engine's handle on a QP's group socket; the QP itself watches its unicast socket.
class McastWatch : public transport::Pollable {
  public:
    explicit McastWatch(std::weak_ptr<Qp> qp) : qp_(std::move(qp)) {}
    void on_io(uint32_t) override {
        if (auto q = qp_.lock()) q->on_mcast_io();
    }

  private:
    std::weak_ptr<Qp> qp_;
};

bool same_endpoint(const sockaddr_in6 &a, const sockaddr_in6 &b) {
    return a.sin6_port == b.sin6_port && std::memcmp(&a.sin6_addr, &b.sin6_addr, 16) == 0;
}

}  // namespace

int Qp::attach_mcast(const uint8_t mgid[16]) {
    Lock lk(mu_);
    if (destroyed_ || qp_base.qp_type != IBV_QPT_UD || !transport::gid_is_multicast(mgid))
        return refuse(EINVAL, "ibv_attach_mcast", "%s",
                      qp_base.qp_type != IBV_QPT_UD ? "only UD QPs join multicast groups"
                                                    : "the GID is not a multicast GID (ff..)");
    for (const McastGroup &g : mc_groups_)
        if (std::memcmp(g.mgid, mgid, 16) == 0) return 0;  // attached already
    if (!mc_fd_) {
        UniqueFd fd = transport::open_mcast_socket(transport::mcast_port());
        if (!fd) return errno ? errno : ENOMEM;
        auto watch = std::make_shared<McastWatch>(weak_from_this());
        mc_armed_ = true;  // published first: the event may fire at once
        if (!transport::ProgressEngine::get().watch(fd.get(), watch, EPOLLIN | EPOLLONESHOT)) {
            mc_armed_ = false;
            return errno ? errno : ENOMEM;
        }
        mc_fd_ = std::move(fd);
        mc_watch_ = std::move(watch);
    }
    McastGroup g;
    std::memcpy(g.mgid, mgid, 16);
    g.ep = transport::mcast_endpoint(mgid, ctx_->dev()->loopback());
    bool joined = false;  // two MGIDs can share an endpoint (IPv6 groups on loopback)
    for (const McastGroup &o : mc_groups_) joined |= same_endpoint(o.ep, g.ep);
    if (!joined) {
        if (int e = transport::mcast_membership(mc_fd_.get(), g.ep, ctx_->dev()->ifindex(), true))
            return e == ENOBUFS ? ENOMEM : e;  // the socket's membership limit
    }
    mc_groups_.push_back(g);
    return 0;
}

int Qp::detach_mcast(const uint8_t mgid[16]) {
    Lock lk(mu_);
    if (destroyed_ || qp_base.qp_type != IBV_QPT_UD)
        return refuse(EINVAL, "ibv_detach_mcast", "only UD QPs join multicast groups");
    for (auto it = mc_groups_.begin(); it != mc_groups_.end(); ++it) {
        if (std::memcmp(it->mgid, mgid, 16) != 0) continue;
        const sockaddr_in6 ep = it->ep;
        mc_groups_.erase(it);
        bool shared = false;
        for (const McastGroup &o : mc_groups_) shared |= same_endpoint(o.ep, ep);
        if (!shared) transport::mcast_membership(mc_fd_.get(), ep, ctx_->dev()->ifindex(), false);
        return 0;
    }
    return refuse(EINVAL, "ibv_detach_mcast", "the QP is not attached to that group");
}

void Qp::on_mcast_io() {
    CallbackGuard g(*this);
    if (!g.alive) return;
    mc_armed_ = false;  // one-shot: the event disarmed the fd
    drive_from_engine();
}

void Qp::mcast_progress() {
    for (int n = 0; n < 256 && ud_recv_one(mc_fd_.get(), true); ++n) {
    }
}

// Called from update_interest, mu_ held.
void Qp::mcast_interest() {
    if (!mc_fd_ || destroyed_ || mc_armed_ || poller_active()) return;
    mc_armed_ = true;
    if (!transport::ProgressEngine::get().rearm(mc_fd_.get(), mc_watch_, EPOLLIN | EPOLLONESHOT))
        mc_armed_ = false;
}

// A datagram for a group leaves on the device's interface, from the AH's source GID (or
// the device's first address of the group's family), so receivers see a true GRH.
bool Qp::mcast_fill_dst(const Ah &ah, sockaddr_storage &dst, socklen_t &dlen, uint8_t *ctl,
                        size_t ctl_cap, size_t &ctl_len) {
    const Device &dev = *ctx_->dev();
    const sockaddr_in6 ep = transport::mcast_endpoint(ah.attr.grh.dgid.raw, dev.loopback());
    const bool v4 = wire::gid_is_v4_mapped(ep.sin6_addr.s6_addr);
    uint8_t src[16];
    const bool have_src = dev.pick_gid(ah.attr.grh.sgid_index, v4, src);
    std::memset(ctl, 0, ctl_cap);
    cmsghdr *c = reinterpret_cast<cmsghdr *>(ctl);
    std::memset(&dst, 0, sizeof dst);
    if (v4) {
        auto &d = reinterpret_cast<sockaddr_in &>(dst);
        d.sin_family = AF_INET;
        d.sin_port = ep.sin6_port;
        std::memcpy(&d.sin_addr, ep.sin6_addr.s6_addr + 12, 4);
        dlen = sizeof d;
        in_pktinfo pi{};
        pi.ipi_ifindex = dev.ifindex();
        if (have_src) std::memcpy(&pi.ipi_spec_dst, src + 12, 4);
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_PKTINFO;
        c->cmsg_len = CMSG_LEN(sizeof pi);
        std::memcpy(CMSG_DATA(c), &pi, sizeof pi);
        ctl_len = CMSG_SPACE(sizeof pi);
    } else {
        std::memcpy(&dst, &ep, sizeof ep);
        dlen = sizeof ep;
        in6_pktinfo pi{};
        pi.ipi6_ifindex = unsigned(dev.ifindex());
        if (have_src) std::memcpy(&pi.ipi6_addr, src, 16);
        c->cmsg_level = IPPROTO_IPV6;
        c->cmsg_type = IPV6_PKTINFO;
        c->cmsg_len = CMSG_LEN(sizeof pi);
        std::memcpy(CMSG_DATA(c), &pi, sizeof pi);
        ctl_len = CMSG_SPACE(sizeof pi);
    }
    return true;
}

// Our own datagram looped back by the kernel: our QPN, from our UD port, from one of our
// device's addresses (the source mcast_fill_dst chose).
bool Qp::is_own_mcast(const sockaddr *from, uint32_t src_qpn) const {
    if (src_qpn != qp_base.qp_num || from->sa_family != AF_INET6) return false;
    const auto *f = reinterpret_cast<const sockaddr_in6 *>(from);
    return ntohs(f->sin6_port) == transport::qpn_port(qp_base.qp_num) &&
           ctx_->dev()->has_gid(f->sin6_addr.s6_addr);
}

}  // namespace softrdma::verbs
