// SPDX-License-Identifier: BSD-2-Clause
// UD QPs: one UDP datagram per message, to the UDP port the destination QPN names. Every
// receive buffer starts with a 40-byte GRH, as on RoCE. Unreliable means unreliable: a wrong
// Q_Key or no posted receive drops the datagram (and counts it).
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "verbs/qp_state_table.h"
#include "common/tsan_annotations.h"
#include "verbs/ah.h"
#include "verbs/context.h"
#include "verbs/cq.h"
#include "verbs/qp.h"
#include "verbs/srq.h"
#include "transport/mcast_socket.h"
#include "transport/wildcard_socket.h"
#include "wire/ud_header.h"

namespace softrdma::verbs {
namespace {

constexpr size_t kGrhLen = 40;
constexpr size_t kUdMaxPayload = 4096;  // the port's active MTU
constexpr uint32_t kQkeyUseQp = 0x80000000u;
constexpr uint32_t kMulticastQpn = 0xffffff;
constexpr int kUdSocketBuffer = 4 << 20;

uint16_t sockaddr_port(const sockaddr *sa) {
    return sa->sa_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_port)
                                     : ntohs(reinterpret_cast<const sockaddr_in *>(sa)->sin_port);
}

}  // namespace

int Qp::ud_open() {
    for (int attempt = 0; attempt < 4; ++attempt) {
        uint16_t port = 0;
        UniqueFd fd = transport::bind_wildcard(SOCK_DGRAM, port);
        if (!fd) return errno ? errno : ENOMEM;
        if (port == 0xffff) continue;  // 0xffffff is the multicast QPN
        // A deep socket buffer rides out bursts while the application reposts receives; the
        // kernel caps the request at net.core.rmem_max.
        int rcvbuf = kUdSocketBuffer;
        setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        // What each sender may have in flight: half the buffer the kernel granted (it
        // reports twice the usable size) in MTU-sized datagrams, which cost ~8 KiB each.
        socklen_t optlen = sizeof rcvbuf;
        getsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, &optlen);
        ud_window_ = std::max(4u, uint32_t(rcvbuf) / 2 / 8192);
        int one = 1;  // the kernel reports datagrams it dropped for a full buffer
        setsockopt(fd.get(), SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
        // ICMP "port unreachable" tells a sender at once that a destination QP is gone, so
        // flow control releases it without waiting for the watchdog (see ud_take_errors).
        setsockopt(fd.get(), IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof one);
        setsockopt(fd.get(), IPPROTO_IP, IP_RECVERR, &one, sizeof one);
        qp_base.qp_num = transport::ud_qpn(port);
        ud_fd_ = std::move(fd);
        ud_flow_ = std::make_unique<transport::UdFlow>();
        ud_buf_.resize(wire::kUdHeaderLen + 65536);
        return 0;
    }
    return EADDRINUSE;
}

// Called once the QP is owned by a shared_ptr: the engine keeps a weak reference.
bool Qp::ud_watch() {
    armed_mask_ = EPOLLIN | EPOLLONESHOT;  // published first: the event may fire at once
    if (transport::ProgressEngine::get().watch(ud_fd_.get(), shared_from_this(), armed_mask_))
        return true;
    armed_mask_ = 0;
    return false;
}

int Qp::ud_check(const ibv_send_wr &wr) const {
    static constexpr const char *kVerb = "ibv_post_send";
    const auto id = (unsigned long long)wr.wr_id;
    if (wr.opcode != IBV_WR_SEND && wr.opcode != IBV_WR_SEND_WITH_IMM)
        return refuse(EINVAL, kVerb, "wr_id %llu: a UD QP only sends (SEND, SEND_WITH_IMM), not %s",
                      id, wr_opcode_name(wr.opcode));
    if (wr.num_sge < 0 || uint32_t(wr.num_sge) > max_send_sge_ || (wr.num_sge && !wr.sg_list))
        return refuse(EINVAL, kVerb,
                      "wr_id %llu: num_sge %d (the QP was created for %u) or a NULL "
                      "sg_list",
                      id, wr.num_sge, max_send_sge_);
    if (!wr.wr.ud.ah) return refuse(EINVAL, kVerb, "wr_id %llu: wr.ud.ah is NULL", id);
    uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
    if (total > kUdMaxPayload)
        return refuse(EINVAL, kVerb, "wr_id %llu: %llu bytes, a UD message fits one MTU (%zu)", id,
                      (unsigned long long)total, size_t(kUdMaxPayload));
    if ((wr.send_flags & IBV_SEND_INLINE) && total > max_inline_)
        return refuse(EINVAL, kVerb, "wr_id %llu: %llu inline bytes, the QP allows %u", id,
                      (unsigned long long)total, max_inline_);
    return 0;
}

int Qp::ud_post_one(const ibv_send_wr &wr) {
    if (const int e = ud_check(wr)) return e;
    // Work requests leave in order: behind held-back ones, or alone if the peer has room.
    if (!ud_pend_count_) {
        UdPending p;
        iovec iov[kMaxSge + 1];
        ud_prepare(wr, p, iov);
        if (p.status != IBV_WC_SUCCESS || p.group || ud_may_send(p)) {
            ud_transmit(p, iov);
            return 0;
        }
        if (ud_pending_.empty()) ud_pending_alloc();
        arm_timer_at(ud_flow_->retry_at(p.dgid, p.dst_qpn));  // the watchdog
    } else if (ud_pend_count_ >= ud_pending_.size()) {
        return refuse(ENOMEM, "ibv_post_send", "the send queue is full (%zu held back)",
                      ud_pending_.size());
    }
    // Held back: prepared again in its ring slot, so its iovecs point at its own header.
    const uint32_t idx = ud_pend_slot(ud_pend_count_);
    UdPending &q = ud_pending_[idx];
    ud_prepare(wr, q, ud_pend_iov(idx));
    if (q.w.flags & IBV_SEND_INLINE) {  // inline data may be reused once posting returns
        uint8_t *keep = ud_pending_inline_.data() + size_t(idx) * max_inline_;
        iovec *qi = ud_pend_iov(idx);
        size_t off = 0;
        for (int k = 1; k < q.iovcnt; ++k) {
            std::memcpy(keep + off, qi[k].iov_base, qi[k].iov_len);
            qi[k].iov_base = keep + off;
            off += qi[k].iov_len;
        }
    }
    ++ud_pend_count_;
    return 0;
}

void Qp::ud_pending_alloc() {
    const size_t n = std::max<size_t>(sq_.size(), 1);
    ud_pending_.resize(n);
    ud_pending_iov_.resize(n * (max_send_sge_ + 1));
    ud_pending_inline_.resize(n * max_inline_);
    ud_pend_head_ = 0;
}

// Builds the datagram of a validated work request: header, destination, iovecs (iov[0] is
// the header). A bad lkey leaves status LOC_PROT_ERR: it completes in its turn, unsent.
void Qp::ud_prepare(const ibv_send_wr &wr, UdPending &p, iovec *iov) {
    const Ah *ah = Ah::from(wr.wr.ud.ah);
    wire::UdHeader h;
    h.dst_qpn = wr.wr.ud.remote_qpn & 0xffffff;
    h.src_qpn = qp_base.qp_num;
    // A set high bit asks for the QP's own Q_Key (IB spec 10.2.5).
    h.qkey = (wr.wr.ud.remote_qkey & kQkeyUseQp) ? attr_.qkey : wr.wr.ud.remote_qkey;
    if (wr.opcode == IBV_WR_SEND_WITH_IMM) {
        h.flags |= wire::kUdFlagImm;
        h.imm = ntohl(wr.imm_data);
    }
    if (wr.send_flags & IBV_SEND_SOLICITED) h.flags |= wire::kUdFlagSolicited;
    wire::encode_ud_header(h, p.head);
    p.w = SendWqe{};
    p.w.wr_id = wr.wr_id;
    p.w.opcode = wr.opcode;
    p.w.flags = wr.send_flags;
    p.status = IBV_WC_SUCCESS;
    p.ctl_len = 0;
    p.dst_qpn = h.dst_qpn;
    std::memcpy(p.dgid, ah->attr.grh.dgid.raw, 16);
    p.iovcnt = 0;
    iov[p.iovcnt++] = {p.head, sizeof p.head};
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge &s = wr.sg_list[i];
        if (!s.length) continue;
        if (wr.send_flags & IBV_SEND_INLINE) {
            iov[p.iovcnt++] = {reinterpret_cast<void *>(uintptr_t(s.addr)), s.length};
            continue;
        }
        MemView v;
        // Imported regions of other processes carry RC/UC traffic only.
        if (mr_check(s.lkey, pd_, s.addr, s.length, 0, v) != KeyCheck::kOk || v.foreign) {
            p.status = IBV_WC_LOC_PROT_ERR;
            return;
        }
        iov[p.iovcnt++] = {v.host, s.length};
    }
    p.group = transport::gid_is_multicast(p.dgid);
    p.has_dst = p.group ? mcast_fill_dst(*ah, p.dst, p.dlen, p.ctl, sizeof p.ctl, p.ctl_len)
                        : gid_to_sockaddr(p.dgid, transport::qpn_port(h.dst_qpn), p.dst, p.dlen);
}

void Qp::ud_transmit(UdPending &p, iovec *iov) {
    if (p.status == IBV_WC_SUCCESS && p.has_dst) {
        msghdr m{};
        m.msg_name = &p.dst;
        m.msg_namelen = p.dlen;
        m.msg_iov = iov;
        m.msg_iovlen = size_t(p.iovcnt);
        if (p.ctl_len) {
            m.msg_control = p.ctl;
            m.msg_controllen = p.ctl_len;
        }
        AppMemoryAccess app;
        // Unreliable: a datagram the kernel cannot take now is simply lost.
        if (::sendmsg(ud_fd_.get(), &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
            stats_->add(stats::kUdDropSendFailed);
        } else {
            stats_->add(stats::kSentPkts);
            stats_->add(stats::kSentBytes, p.w.total_len);
            if (!p.group) ud_flow_->sent(p.dgid, p.dst_qpn, now_ns());
        }
    }
    complete_send(p.w, p.status);
}

// Whether the destination's window has room; says so when the watchdog gives up waiting for
// its grants, since that costs the application a 1 s stall.
bool Qp::ud_may_send(const UdPending &p) {
    bool released = false;
    if (!ud_flow_->may_send(p.dgid, p.dst_qpn, now_ns(), &released)) return false;
    if (released) {
        stats_->add(stats::kUdFlowReleased);
        SR_DEBUG("qp %u: qp %u granted nothing for 1 s: its datagrams go unmetered until it does",
                 qp_base.qp_num, p.dst_qpn);
    }
    return true;
}

// Sends held-back work requests, in order, as far as the peers' windows allow.
void Qp::ud_flush_pending() {
    while (ud_pend_count_) {
        UdPending &p = ud_pending_[ud_pend_head_];
        if (p.status == IBV_WC_SUCCESS && !p.group && !ud_may_send(p)) {
            arm_timer_at(ud_flow_->retry_at(p.dgid, p.dst_qpn));  // the watchdog
            return;
        }
        ud_transmit(p, ud_pend_iov(ud_pend_head_));
        ud_pend_head_ = ud_pend_slot(1);
        --ud_pend_count_;
    }
}

// A QP in error flushes what it held back.
void Qp::ud_flush_pending_error() {
    while (ud_pend_count_) {
        complete_send(ud_pending_[ud_pend_head_].w, IBV_WC_WR_FLUSH_ERR);
        ud_pend_head_ = ud_pend_slot(1);
        --ud_pend_count_;
    }
}

void Qp::ud_progress(Lock &) {
    if (!ud_fd_) return;
    for (int n = 0; n < 256 && ud_recv_one(ud_fd_.get(), false); ++n) {
    }
    if (mc_fd_) mcast_progress();
    if (ud_pend_count_) ud_flush_pending();  // grants may have come in
}

// Takes one datagram off `fd` and delivers it; false once the socket is empty.
bool Qp::ud_recv_one(int fd, bool mcast) {
    sockaddr_storage from{};
    iovec iov{ud_buf_.data(), ud_buf_.size()};
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof from;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(in6_pktinfo))];
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    const ssize_t len = ::recvmsg(fd, &m, MSG_DONTWAIT);
    if (len < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || mcast) return false;
        ud_take_errors(fd);  // the error was an ICMP report: datagrams may still be queued
        return true;
    }
    const uint8_t *mgid = nullptr;
    for (cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
            uint32_t n;
            std::memcpy(&n, CMSG_DATA(c), sizeof n);
            if (n != stats_->get(stats::kUdDropSocketFull))
                SR_DEBUG("qp %u: socket buffer overflowed, %u datagrams lost so far",
                         qp_base.qp_num, n);
            stats_->c[stats::kUdDropSocketFull].store(n, std::memory_order_relaxed);
        } else if (mcast && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
            in6_pktinfo pi;
            std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
            // The group the datagram was sent to names the MGID the receiver sees.
            for (const McastGroup &g : mc_groups_)
                if (std::memcmp(&g.ep.sin6_addr, &pi.ipi6_addr, 16) == 0) mgid = g.mgid;
        }
    }
    if (mcast && !mgid) {
        stats_->add(stats::kUdDropMalformed);  // not for a group this QP is attached to
        return true;
    }
    const std::span<const uint8_t> dgram(ud_buf_.data(), size_t(len));
    const auto *sa = reinterpret_cast<const sockaddr *>(&from);
    wire::UdHeader h;
    // A UD QP sends from the port its QPN names: any other source QPN is forged, and would
    // otherwise claim flow-control entries (or grants) for QPs that never sent.
    if (!wire::decode_ud_header(dgram, h) || h.dst_qpn != (mgid ? kMulticastQpn : qp_base.qp_num) ||
        h.src_qpn != transport::ud_qpn(sockaddr_port(sa))) {
        stats_->add(stats::kUdDropMalformed);
        return true;
    }
    if (!mgid) {
        uint8_t peer[16];
        sockaddr_to_gid(sa, peer);
        if (h.flags & wire::kUdFlagCredit) {  // a grant for our own sends to that peer
            ud_flow_->granted(peer, h.src_qpn, h.imm, h.qkey, h.flags & wire::kUdFlagRestart);
            return true;
        }
        uint32_t consumed;
        bool restart;
        if (ud_flow_->consumed(peer, h.src_qpn, now_ns(), ud_window_, consumed, restart))
            ud_send_grant(sa, m.msg_namelen, h.src_qpn, consumed, restart);
    } else if (h.flags & wire::kUdFlagCredit) {  // grants are never multicast
        stats_->add(stats::kUdDropMalformed);
        return true;
    }
    ud_deliver(h, dgram.subspan(wire::kUdHeaderLen), sa, mgid);
    return true;
}

// Reads the ICMP errors the kernel queued for our datagrams. A port unreachable means the
// destination QP is gone (its socket closed): held-back sends to it go now, as hardware
// completes sends to a vanished QP.
void Qp::ud_take_errors(int fd) {
    for (int n = 0; n < 64; ++n) {
        sockaddr_storage dst{};
        uint8_t probe[wire::kUdHeaderLen];
        iovec iov{probe, sizeof probe};
        msghdr m{};
        m.msg_name = &dst;
        m.msg_namelen = sizeof dst;
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        alignas(cmsghdr) uint8_t ctl[256];
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        if (::recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
        for (cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            const bool v6 = c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR;
            const bool v4 = c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR;
            if (!v6 && !v4) continue;
            sock_extended_err ee;
            std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
            const bool icmp =
                ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6;
            if (!icmp || ee.ee_errno != ECONNREFUSED || m.msg_namelen == 0) continue;
            uint8_t gid[16];
            sockaddr_to_gid(reinterpret_cast<const sockaddr *>(&dst), gid);
            const uint16_t port = sockaddr_port(reinterpret_cast<const sockaddr *>(&dst));
            const uint32_t qpn = transport::ud_qpn(port);
            if (ud_flow_->unreachable(gid, qpn))
                SR_DEBUG("qp %u: qp %u is gone (port %u unreachable): its sends are not held",
                         qp_base.qp_num, qpn, port);
        }
    }
}

// Tells a sender how many of its datagrams we took off the socket and how many more may come.
void Qp::ud_send_grant(const sockaddr *to, socklen_t len, uint32_t peer_qpn, uint32_t consumed,
                       bool restart) {
    wire::UdHeader g;
    g.flags = wire::kUdFlagCredit | (restart ? wire::kUdFlagRestart : 0);
    g.dst_qpn = peer_qpn;
    g.src_qpn = qp_base.qp_num;
    g.qkey = ud_window_;
    g.imm = consumed;
    uint8_t head[wire::kUdHeaderLen];
    wire::encode_ud_header(g, head);
    ::sendto(ud_fd_.get(), head, sizeof head, MSG_DONTWAIT | MSG_NOSIGNAL, to, len);
}

void Qp::ud_deliver(const wire::UdHeader &h, std::span<const uint8_t> payload, const sockaddr *from,
                    const uint8_t *mgid) {
    const ibv_qp_state st = qp_base.state;
    if (mgid && block_self_mcast_ && is_own_mcast(from, h.src_qpn)) {
        stats_->add(stats::kUdDropOwnMcast);
        return;
    }
    if (st != IBV_QPS_RTR && st != IBV_QPS_RTS && st != IBV_QPS_SQD) {
        stats_->add(stats::kUdDropNotReady);
        return;
    }
    if (h.qkey != attr_.qkey) {  // Q_Key violation: dropped silently, as hardware does
        stats_->add(stats::kUdDropQkey);
        return;
    }
    RecvWqe r;
    if (!take_recv(r)) {  // no receive posted: the datagram is lost
        stats_->add(stats::kUdDropNoRecv);
        if (stats_->get(stats::kUdDropNoRecv) == 1)
            SR_DEBUG("qp %u: datagram dropped, no receive posted (first of its kind)",
                     qp_base.qp_num);
        return;
    }
    const uint64_t need = kGrhLen + payload.size();
    if (need > r.total_len) {
        complete_recv(r, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, false);
        return;
    }
    // The GRH the receiver sees: IPv6 version, payload length, sender and receiver GIDs.
    uint8_t grh[kGrhLen] = {};
    grh[0] = 0x60;
    const uint16_t plen = uint16_t(payload.size());
    grh[4] = uint8_t(plen >> 8);
    grh[5] = uint8_t(plen);
    grh[6] = 0x11;  // next header: UDP, as RoCE v2
    grh[7] = 64;
    sockaddr_to_gid(from, grh + 8);
    if (mgid)
        std::memcpy(grh + 24, mgid, 16);
    else
        ctx_->dev()->gid_at(0, grh + 24);
    iovec iov[transport::kMaxPlacementIov];
    int cnt = 0;
    if (!sge_iov(cur_recv_sges_.data(), r.num_sge, 0, need, iov, cnt, transport::kMaxPlacementIov,
                 IBV_ACCESS_LOCAL_WRITE) ||
        foreign_.any) {
        complete_recv(r, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, false);
        return;
    }
    {
        AppMemoryAccess app;
        int vi = 0;
        size_t voff = 0;
        transport::copy_to_iov(iov, vi, voff, grh, kGrhLen);
        transport::copy_to_iov(iov, vi, voff, payload.data(), payload.size());
    }
    ibv_wc wc{};
    wc.wr_id = r.wr_id;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = uint32_t(need);
    wc.qp_num = qp_base.qp_num;
    wc.src_qp = h.src_qpn;
    wc.wc_flags = IBV_WC_GRH;
    if (h.flags & wire::kUdFlagImm) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = htonl(h.imm);
    }
    wc.pkey_index = 0;
    stats_->add(stats::kRcvdPkts);
    stats_->add(stats::kRcvdBytes, payload.size());
    if (!rcq_->push(wc, h.flags & wire::kUdFlagSolicited)) report_async(IBV_EVENT_CQ_ERR);
}

}  // namespace softrdma::verbs
