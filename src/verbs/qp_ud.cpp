// UD QPs: one UDP datagram per message, to the UDP port the destination QPN names. Every
// receive buffer starts with a 40-byte GRH, as on RoCE. Unreliable means unreliable: a wrong
// Q_Key or no posted receive drops the datagram (and counts it).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/tsan_annotations.h"
#include "verbs/ah.h"
#include "verbs/context.h"
#include "verbs/cq.h"
#include "verbs/qp.h"
#include "verbs/srq.h"
#include "transport/mcast_socket.h"
#include "wire/ud_header.h"

namespace softrdma::verbs {
namespace {

constexpr size_t kGrhLen = 40;
constexpr size_t kUdMaxPayload = 4096;  // the port's active MTU
constexpr uint32_t kQkeyUseQp = 0x80000000u;
constexpr uint32_t kMulticastQpn = 0xffffff;
constexpr int kUdSocketBuffer = 4 << 20;

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
        int one = 1;  // the kernel reports datagrams it dropped for a full buffer
        setsockopt(fd.get(), SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
        qp_base.qp_num = uint32_t(port) << 8 | transport::kUdSlot;
        ud_fd_ = std::move(fd);
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

int Qp::ud_post_one(const ibv_send_wr &wr) {
    if (wr.opcode != IBV_WR_SEND && wr.opcode != IBV_WR_SEND_WITH_IMM) return EINVAL;
    if (wr.num_sge < 0 || uint32_t(wr.num_sge) > max_send_sge_ || (wr.num_sge && !wr.sg_list))
        return EINVAL;
    if (!wr.wr.ud.ah) return EINVAL;
    uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
    if (total > kUdMaxPayload) return EINVAL;  // UD messages fit one path MTU
    if ((wr.send_flags & IBV_SEND_INLINE) && total > max_inline_) return EINVAL;
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
    uint8_t head[wire::kUdHeaderLen];
    wire::encode_ud_header(h, head);
    iovec iov[kMaxSge + 1];
    int cnt = 0;
    iov[cnt++] = {head, sizeof head};
    ibv_wc_status st = IBV_WC_SUCCESS;
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge &s = wr.sg_list[i];
        if (!s.length) continue;
        if (wr.send_flags & IBV_SEND_INLINE) {
            iov[cnt++] = {reinterpret_cast<void *>(uintptr_t(s.addr)), s.length};
            continue;
        }
        MemView v;
        if (mr_check(s.lkey, pd_, s.addr, s.length, 0, v) != KeyCheck::kOk) {
            st = IBV_WC_LOC_PROT_ERR;
            break;
        }
        iov[cnt++] = {v.host, s.length};
    }
    if (st == IBV_WC_SUCCESS) {
        sockaddr_storage dst;
        socklen_t dlen;
        msghdr m{};
        alignas(cmsghdr) uint8_t ctl[CMSG_SPACE(sizeof(in6_pktinfo))];
        const bool to_group = transport::gid_is_multicast(ah->attr.grh.dgid.raw);
        if (to_group ? mcast_fill_dst(*ah, dst, dlen, m, ctl, sizeof ctl)
                     : gid_to_sockaddr(ah->attr.grh.dgid.raw, transport::qpn_port(h.dst_qpn), dst,
                                       dlen)) {
            m.msg_name = &dst;
            m.msg_namelen = dlen;
            m.msg_iov = iov;
            m.msg_iovlen = size_t(cnt);
            AppMemoryAccess app;
            // Unreliable: a datagram the kernel cannot take now is simply lost.
            if (::sendmsg(ud_fd_.get(), &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                ++ud_drops_.send_failed;
        }
    }
    SendWqe w;
    w.wr_id = wr.wr_id;
    w.opcode = wr.opcode;
    w.flags = wr.send_flags;
    complete_send(w, st);
    return 0;
}

void Qp::ud_progress(Lock &) {
    if (!ud_fd_) return;
    for (int n = 0; n < 256 && ud_recv_one(ud_fd_.get(), false); ++n) {
    }
    if (mc_fd_) mcast_progress();
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
    if (len < 0) return false;
    const uint8_t *mgid = nullptr;
    for (cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
            uint32_t n;
            std::memcpy(&n, CMSG_DATA(c), sizeof n);
            if (n != ud_drops_.socket_full)
                SR_DEBUG("qp %u: socket buffer overflowed, %u datagrams lost so far",
                         qp_base.qp_num, n);
            ud_drops_.socket_full = n;
        } else if (mcast && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
            in6_pktinfo pi;
            std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
            // The group the datagram was sent to names the MGID the receiver sees.
            for (const McastGroup &g : mc_groups_)
                if (std::memcmp(&g.ep.sin6_addr, &pi.ipi6_addr, 16) == 0) mgid = g.mgid;
        }
    }
    if (mcast && !mgid) {
        ++ud_drops_.malformed;  // not for a group this QP is attached to
        return true;
    }
    ud_deliver(std::span<const uint8_t>(ud_buf_.data(), size_t(len)),
               reinterpret_cast<const sockaddr *>(&from), mgid);
    return true;
}

void Qp::ud_deliver(std::span<const uint8_t> dgram, const sockaddr *from, const uint8_t *mgid) {
    wire::UdHeader h;
    const ibv_qp_state st = qp_base.state;
    if (!wire::decode_ud_header(dgram, h) || h.dst_qpn != (mgid ? kMulticastQpn : qp_base.qp_num)) {
        ++ud_drops_.malformed;
        return;
    }
    if (mgid && block_self_mcast_ && is_own_mcast(from, h.src_qpn)) {
        ++ud_drops_.self_loopback;
        return;
    }
    if (st != IBV_QPS_RTR && st != IBV_QPS_RTS && st != IBV_QPS_SQD) {
        ++ud_drops_.not_ready;
        return;
    }
    if (h.qkey != attr_.qkey) {  // Q_Key violation: dropped silently, as hardware does
        ++ud_drops_.qkey;
        return;
    }
    const auto payload = dgram.subspan(wire::kUdHeaderLen);
    RecvWqe r;
    if (!take_recv(r)) {  // no receive posted: the datagram is lost
        if (ud_drops_.no_recv++ == 0)
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
    uint8_t sgid[16];
    sockaddr_storage f{};
    std::memcpy(&f, from, from->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
    if (f.ss_family == AF_INET6) {
        std::memcpy(sgid, &reinterpret_cast<sockaddr_in6 &>(f).sin6_addr, 16);
    } else {
        std::memset(sgid, 0, 16);
        sgid[10] = sgid[11] = 0xff;
        std::memcpy(sgid + 12, &reinterpret_cast<sockaddr_in &>(f).sin_addr, 4);
    }
    std::memcpy(grh + 8, sgid, 16);
    if (mgid) {
        std::memcpy(grh + 24, mgid, 16);
    } else {
        const auto gids = ctx_->dev()->gids();
        if (!gids.empty()) std::memcpy(grh + 24, gids[0].raw, 16);
    }
    iovec iov[transport::kMaxPlacementIov];
    int cnt = 0;
    if (!sge_iov(cur_recv_sges_.data(), r.num_sge, 0, need, iov, cnt, transport::kMaxPlacementIov,
                 IBV_ACCESS_LOCAL_WRITE)) {
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
    if (!rcq_->push(wc, h.flags & wire::kUdFlagSolicited)) report_async(IBV_EVENT_CQ_ERR);
}

}  // namespace softrdma::verbs
