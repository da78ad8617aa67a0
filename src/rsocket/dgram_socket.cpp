// SPDX-License-Identifier: BSD-2-Clause
#include "rsocket/dgram_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"

#include "wire/rsocket_msg.h"

namespace softrdma::rs {
namespace {

constexpr uint32_t kGrhLen = 40;
constexpr uint32_t kUdMtu = 4096;  // the device's active MTU: the largest UD message
constexpr uint32_t kMaxPayload = kUdMtu - wire::kRsUdHdrLen;
constexpr uint32_t kSlots = 256;  // receives posted, and send slots
constexpr uint32_t kRecvSlot = kGrhLen + kUdMtu;
constexpr int kResolveMs = 2000;
constexpr uint64_t kSpinNs = 20'000;
constexpr size_t kMaxDests = 4096;

size_t iov_total(const iovec *iov, int iovcnt) {
    size_t n = 0;
    for (int i = 0; i < iovcnt; ++i) n += iov[i].iov_len;
    return n;
}

void gather(uint8_t *dst, const iovec *iov, int iovcnt) {
    for (int i = 0; i < iovcnt; ++i) {
        std::memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
}

size_t scatter(const uint8_t *src, size_t n, const iovec *iov, int iovcnt) {
    size_t done = 0;
    for (int i = 0; i < iovcnt && done < n; ++i) {
        const size_t k = std::min(iov[i].iov_len, n - done);
        std::memcpy(iov[i].iov_base, src + done, k);
        done += k;
    }
    return done;
}

// IPv4 travels IPv4-mapped in GIDs, as on RoCE.
void addr_to_gid(const sockaddr *a, uint8_t gid[16]) {
    std::memset(gid, 0, 16);
    if (a->sa_family == AF_INET) {
        gid[10] = gid[11] = 0xff;
        std::memcpy(gid + 12, &reinterpret_cast<const sockaddr_in *>(a)->sin_addr, 4);
    } else {
        std::memcpy(gid, &reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr, 16);
    }
}

socklen_t gid_to_addr(const uint8_t gid[16], uint16_t port_be, int domain, sockaddr_storage &out) {
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::memset(&out, 0, sizeof out);
    if (domain == AF_INET && std::memcmp(gid, kMapped, 12) == 0) {
        auto *s = reinterpret_cast<sockaddr_in *>(&out);
        s->sin_family = AF_INET;
        s->sin_port = port_be;
        std::memcpy(&s->sin_addr, gid + 12, 4);
        return sizeof(sockaddr_in);
    }
    auto *s = reinterpret_cast<sockaddr_in6 *>(&out);
    s->sin6_family = AF_INET6;
    s->sin6_port = port_be;
    std::memcpy(&s->sin6_addr, gid, 16);
    return sizeof(sockaddr_in6);
}

uint16_t port_of(const sockaddr *a) {
    return a->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in *>(a)->sin_port
                                   : reinterpret_cast<const sockaddr_in6 *>(a)->sin6_port;
}

bool is_wildcard(const sockaddr *a) {
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in *>(a)->sin_addr.s_addr == INADDR_ANY;
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr);
}

}  // namespace

std::shared_ptr<DgramSocket> DgramSocket::create(int domain) {
    auto s = std::make_shared<DgramSocket>(Key{});
    if (!s->init(domain)) return nullptr;
    return s;
}

bool DgramSocket::init(int domain) {
    domain_ = domain;
    udp_.reset(::socket(domain, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!udp_) return false;
    ch_.reset(rdma_create_event_channel());
    if (!ch_) return false;
    const int fl = ::fcntl(ch_->fd, F_GETFL);
    ::fcntl(ch_->fd, F_SETFL, fl | O_NONBLOCK);
    fd_ = udp_.get();
    return true;
}

DgramSocket::~DgramSocket() {
    dests_.clear();  // address handles before the PD
    if (id_ && id_->qp) rdma_destroy_qp(id_.get());
}

DgramSocket::AddrKey DgramSocket::key_of(const sockaddr *a) {
    uint8_t k[18];
    addr_to_gid(a, k);
    const uint16_t p = port_of(a);
    std::memcpy(k + 16, &p, 2);
    return AddrKey(k, k + sizeof k);
}

// The UD QP sits on the device of our address, or of the route toward the first peer when
// the socket is bound to a wildcard.
int DgramSocket::ensure_qp(const sockaddr *toward) {
    if (id_ && id_->qp) return 0;
    if (!id_) {
        rdma_cm_id *id = nullptr;
        if (rdma_create_id(ch_.get(), &id, this, RDMA_PS_UDP) != 0) return -1;
        id_.reset(id);
        sockaddr_storage local{};
        socklen_t len = sizeof local;
        const bool bound =
            ::getsockname(udp_.get(), reinterpret_cast<sockaddr *>(&local), &len) == 0 &&
            !is_wildcard(reinterpret_cast<sockaddr *>(&local));
        // Port 0: the QP's own port; the application's port is the UDP socket's.
        if (local.ss_family == AF_INET)
            reinterpret_cast<sockaddr_in *>(&local)->sin_port = 0;
        else
            reinterpret_cast<sockaddr_in6 *>(&local)->sin6_port = 0;
        // Resolving picks the device (loopback and wildcard binds name none): toward the first
        // peer, or toward our own address.
        const sockaddr *dst = toward  ? toward
                              : bound ? reinterpret_cast<sockaddr *>(&local)
                                      : nullptr;
        if (!dst) return fail(EDESTADDRREQ);
        if (rdma_resolve_addr(id, bound ? reinterpret_cast<sockaddr *>(&local) : nullptr,
                              const_cast<sockaddr *>(dst), kResolveMs) != 0)
            return -1;
        const uint64_t until = now_ns() + uint64_t(kResolveMs) * 1'000'000;
        for (;;) {
            rdma_cm_event *ev = nullptr;
            if (rdma_get_cm_event(ch_.get(), &ev) == 0) {
                const auto type = ev->event;
                rdma_ack_cm_event(ev);
                if (type == RDMA_CM_EVENT_ADDR_RESOLVED) break;
                id_.reset();
                return fail(EHOSTUNREACH);
            }
            if (now_ns() > until) {
                id_.reset();
                return fail(ETIMEDOUT);
            }
            pollfd p{ch_->fd, POLLIN, 0};
            ::poll(&p, 1, 100);
        }
    }
    ibv_context *verbs = id_->verbs;
    pd_.reset(ibv_alloc_pd(verbs));
    cc_.reset(pd_ ? ibv_create_comp_channel(verbs) : nullptr);
    if (!cc_) return -1;
    ::fcntl(cc_->fd, F_SETFL, ::fcntl(cc_->fd, F_GETFL) | O_NONBLOCK);
    cq_.reset(ibv_create_cq(verbs, int(2 * kSlots), nullptr, cc_.get(), 0));
    if (!cq_) return -1;
    ibv_qp_init_attr qa{};
    qa.send_cq = cq_.get();
    qa.recv_cq = cq_.get();
    qa.qp_type = IBV_QPT_UD;
    qa.sq_sig_all = 1;
    qa.cap.max_send_wr = kSlots;
    qa.cap.max_recv_wr = kSlots;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(id_.get(), pd_.get(), &qa) != 0) return -1;
    rbuf_ = std::make_unique_for_overwrite<uint8_t[]>(size_t(kSlots) * kRecvSlot);
    rbuf_mr_.reset(
        ibv_reg_mr(pd_.get(), rbuf_.get(), size_t(kSlots) * kRecvSlot, IBV_ACCESS_LOCAL_WRITE));
    sbuf_ = std::make_unique_for_overwrite<uint8_t[]>(size_t(kSlots) * kUdMtu);
    sbuf_mr_.reset(ibv_reg_mr(pd_.get(), sbuf_.get(), size_t(kSlots) * kUdMtu, 0));
    if (!rbuf_mr_ || !sbuf_mr_) return -1;
    ud_in_len_.assign(kSlots, 0);
    free_send_.clear();
    for (uint32_t i = 0; i < kSlots; ++i) {
        free_send_.push_back(i);
        post_recv(i);
    }
    return 0;
}

void DgramSocket::post_recv(uint32_t slot) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(rbuf_.get() + size_t(slot) * kRecvSlot), kRecvSlot,
                rbuf_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    ibv_post_recv(id_->qp, &wr, &bad);
}

void DgramSocket::learn(const sockaddr *addr, socklen_t, uint32_t qpn) {
    if (!pd_) return;
    // Anyone can send us a datagram: the peers remembered stay bounded.
    if (dests_.size() >= kMaxDests && !dests_.count(key_of(addr))) dests_.clear();
    Dest &d = dests_[key_of(addr)];
    if (d.ah && d.qpn == qpn) return;
    ibv_ah_attr at{};
    at.is_global = 1;
    at.port_num = 1;
    at.grh.hop_limit = 64;
    addr_to_gid(addr, at.grh.dgid.raw);
    d.ah.reset(ibv_create_ah(pd_.get(), &at));
    d.qpn = d.ah ? qpn : 0;
}

int DgramSocket::send_udp(const sockaddr *to, socklen_t tolen, uint8_t op, const iovec *iov,
                          int iovcnt, size_t total) {
    uint8_t hdr[wire::kRsUdpHdrLen];
    wire::RsUdpHdr h;
    h.op = wire::RsUdpOp(op);
    h.qpn = id_ && id_->qp ? id_->qp->qp_num : 0;
    wire::encode_rs_udp_hdr(h, hdr);
    iovec v[1 + 64];
    v[0] = {hdr, sizeof hdr};
    const int n = std::min(iovcnt, 64);
    for (int i = 0; i < n; ++i) v[1 + i] = iov[i];
    msghdr m{};
    m.msg_name = const_cast<sockaddr *>(to);
    m.msg_namelen = tolen;
    m.msg_iov = v;
    m.msg_iovlen = size_t(1 + n);
    const ssize_t r = ::sendmsg(udp_.get(), &m, MSG_NOSIGNAL);
    if (r < 0) return -1;
    (void)total;
    return 0;
}

bool DgramSocket::poll_udp() {
    bool any = false;
    for (;;) {
        Datagram d;
        d.data.resize(wire::kRsUdpHdrLen + 65536);
        d.fromlen = sizeof d.from;
        const ssize_t r = ::recvfrom(udp_.get(), d.data.data(), d.data.size(), MSG_DONTWAIT,
                                     reinterpret_cast<sockaddr *>(&d.from), &d.fromlen);
        if (r < 0) break;
        any = true;
        wire::RsUdpHdr h;
        if (!wire::decode_rs_udp_hdr({d.data.data(), size_t(r)}, h)) continue;  // not ours
        const auto *from = reinterpret_cast<const sockaddr *>(&d.from);
        if (h.op == wire::RsUdpOp::kResolved) {
            if (h.qpn) learn(from, d.fromlen, h.qpn);
            continue;
        }
        // A first datagram: answer with our QP so the rest can go over UD.
        if (ensure_qp(from) == 0) {
            if (h.qpn) learn(from, d.fromlen, h.qpn);
            send_udp(from, d.fromlen, uint8_t(wire::RsUdpOp::kResolved), nullptr, 0, 0);
        }
        d.data.erase(d.data.begin(), d.data.begin() + wire::kRsUdpHdrLen);
        d.data.resize(size_t(r) - wire::kRsUdpHdrLen);
        udp_in_.push_back(std::move(d));
    }
    return any;
}

bool DgramSocket::poll_cq() {
    if (!cq_) return false;
    ibv_wc wc[32];
    bool any = false;
    int n;
    while ((n = ibv_poll_cq(cq_.get(), 32, wc)) > 0) {
        any = true;
        for (int i = 0; i < n; ++i) {
            const ibv_wc &w = wc[i];
            const auto slot = uint32_t(w.wr_id);
            if (!(w.opcode & IBV_WC_RECV)) {
                free_send_.push_back(slot);
                continue;
            }
            if (w.status != IBV_WC_SUCCESS || w.byte_len < kGrhLen + wire::kRsUdHdrLen) {
                if (w.status != IBV_WC_WR_FLUSH_ERR) post_recv(slot);
                continue;
            }
            ud_in_len_[slot] = w.byte_len;
            ud_in_.push_back(slot);
        }
    }
    return any;
}

bool DgramSocket::progress() {
    const bool u = poll_udp();
    const bool c = poll_cq();
    return u || c;
}

int DgramSocket::wait(Lock &lk) {
    const uint64_t until = now_ns() + kSpinNs;
    do {
        if (progress()) return 0;
    } while (now_ns() < until);
    if (cq_) ibv_req_notify_cq(cq_.get(), 0);
    if (progress()) return 0;
    pollfd p[2] = {{udp_.get(), POLLIN, 0}, {cc_ ? cc_->fd : -1, POLLIN, 0}};
    lk.unlock();
    const int r = ::poll(p, 2, 100);  // another thread may take our wake-up: look again
    const int e = errno;
    lk.lock();
    disarm_locked();
    if (r < 0 && e == EINTR) return fail(EINTR);
    return 0;
}

int DgramSocket::bind(const sockaddr *addr, socklen_t len) {
    std::lock_guard lk(mu_);
    if (::bind(udp_.get(), addr, len) != 0) return -1;
    if (!is_wildcard(addr)) return ensure_qp(nullptr);
    return 0;
}

int DgramSocket::connect(const sockaddr *addr, socklen_t len) {
    std::lock_guard lk(mu_);
    if (!addr || len < sizeof(sockaddr_in) || len > sizeof peer_) return fail(EINVAL);
    std::memcpy(&peer_, addr, len);
    peer_len_ = len;
    connected_ = true;
    return ensure_qp(addr);
}

int DgramSocket::shutdown(int how) {
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return fail(EINVAL);
    std::lock_guard lk(mu_);
    return connected_ ? 0 : fail(ENOTCONN);
}

ssize_t DgramSocket::recvmsg(const iovec *iov, int iovcnt, int flags, sockaddr *from,
                             socklen_t *fromlen) {
    Lock lk(mu_);
    const bool dontwait = nonblock_ || (flags & MSG_DONTWAIT);
    const bool peek = flags & MSG_PEEK;
    for (;;) {
        if (udp_in_.empty() && ud_in_.empty()) progress();
        if (!udp_in_.empty()) {
            Datagram &d = udp_in_.front();
            const size_t n = scatter(d.data.data(), d.data.size(), iov, iovcnt);
            if (from && fromlen) {
                std::memcpy(from, &d.from, std::min(*fromlen, d.fromlen));
                *fromlen = d.fromlen;
            }
            const size_t whole = d.data.size();
            if (!peek) udp_in_.pop_front();
            return ssize_t(flags & MSG_TRUNC ? whole : n);
        }
        if (!ud_in_.empty()) {
            const uint32_t slot = ud_in_.front();
            const uint8_t *p = rbuf_.get() + size_t(slot) * kRecvSlot;
            wire::RsUdHdr h;
            wire::decode_rs_ud_hdr({p + kGrhLen, wire::kRsUdHdrLen}, h);
            sockaddr_storage src;
            const socklen_t slen = gid_to_addr(p + 8, htons(h.src_port), domain_, src);
            const size_t whole = ud_in_len_[slot] - kGrhLen - wire::kRsUdHdrLen;
            const size_t n = scatter(p + kGrhLen + wire::kRsUdHdrLen, whole, iov, iovcnt);
            learn(reinterpret_cast<sockaddr *>(&src), slen, h.src_qpn);
            if (from && fromlen) {
                std::memcpy(from, &src, std::min(*fromlen, slen));
                *fromlen = slen;
            }
            if (!peek) {
                ud_in_.pop_front();
                post_recv(slot);
            }
            return ssize_t(flags & MSG_TRUNC ? whole : n);
        }
        if (dontwait) return fail(EAGAIN);
        if (wait(lk) != 0) return -1;
    }
}

ssize_t DgramSocket::sendmsg(const iovec *iov, int iovcnt, int flags, const sockaddr *to,
                             socklen_t tolen) {
    Lock lk(mu_);
    if (!to) {
        if (!connected_) return fail(EDESTADDRREQ);
        to = reinterpret_cast<const sockaddr *>(&peer_);
        tolen = peer_len_;
    }
    if (to->sa_family != AF_INET && to->sa_family != AF_INET6) return fail(EAFNOSUPPORT);
    const size_t total = iov_total(iov, iovcnt);
    if (total > kMaxPayload) return fail(EMSGSIZE);
    const bool dontwait = nonblock_ || (flags & MSG_DONTWAIT);
    if (ensure_qp(to) != 0) return -1;
    for (;;) {
        auto it = dests_.find(key_of(to));
        if (it == dests_.end() || !it->second.ah) {
            // Its QP is not known yet: this one goes over UDP and asks for it.
            if (send_udp(to, tolen, uint8_t(wire::RsUdpOp::kData), iov, iovcnt, total) != 0)
                return -1;
            return ssize_t(total);
        }
        if (free_send_.empty()) {
            if (progress()) continue;
            if (dontwait) return fail(EAGAIN);
            if (wait(lk) != 0) return -1;
            continue;
        }
        const uint32_t slot = free_send_.back();
        free_send_.pop_back();
        uint8_t *p = sbuf_.get() + size_t(slot) * kUdMtu;
        sockaddr_storage local{};
        socklen_t llen = sizeof local;
        ::getsockname(udp_.get(), reinterpret_cast<sockaddr *>(&local), &llen);
        wire::RsUdHdr h;
        h.src_port = ntohs(port_of(reinterpret_cast<sockaddr *>(&local)));
        h.src_qpn = id_->qp->qp_num;
        wire::encode_rs_ud_hdr(h, p);
        gather(p + wire::kRsUdHdrLen, iov, iovcnt);
        ibv_sge sge{reinterpret_cast<uintptr_t>(p), uint32_t(wire::kRsUdHdrLen + total),
                    sbuf_mr_->lkey};
        ibv_send_wr wr{};
        wr.wr_id = slot;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.ud.ah = it->second.ah.get();
        wr.wr.ud.remote_qpn = it->second.qpn;
        wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
        ibv_send_wr *bad = nullptr;
        if (ibv_post_send(id_->qp, &wr, &bad) != 0) {
            free_send_.push_back(slot);
            return fail(EIO);
        }
        return ssize_t(total);
    }
}

int DgramSocket::getpeername(sockaddr *addr, socklen_t *len) {
    std::lock_guard lk(mu_);
    if (!connected_) return fail(ENOTCONN);
    if (!addr || !len) return fail(EFAULT);
    std::memcpy(addr, &peer_, std::min(*len, peer_len_));
    *len = peer_len_;
    return 0;
}

int DgramSocket::getsockname(sockaddr *addr, socklen_t *len) {
    return ::getsockname(udp_.get(), addr, len);
}

int DgramSocket::setsockopt(int level, int name, const void *val, socklen_t len) {
    if (level == SOL_RDMA) return 0;  // the UD queues have one size
    // Everything else is the UDP socket's: it owns the address.
    return ::setsockopt(udp_.get(), level, name, val, len);
}

int DgramSocket::getsockopt(int level, int name, void *val, socklen_t *len) {
    if (level == SOL_RDMA) return fail(ENOTSUP);
    return ::getsockopt(udp_.get(), level, name, val, len);
}

int DgramSocket::fcntl_getfl() {
    std::lock_guard lk(mu_);
    return O_RDWR | (nonblock_ ? O_NONBLOCK : 0);
}

int DgramSocket::fcntl_setfl(int flags) {
    std::lock_guard lk(mu_);
    nonblock_ = (flags & O_NONBLOCK) != 0;
    return 0;
}

short DgramSocket::ready(short events) {
    std::lock_guard lk(mu_);
    progress();
    short r = POLLOUT;  // a datagram always finds its way: over UD, or over UDP
    if (!udp_in_.empty() || !ud_in_.empty()) r |= POLLIN;
    return short(r & events);
}

void DgramSocket::arm(short, std::vector<pollfd> &out) {
    std::lock_guard lk(mu_);
    if (cq_) ibv_req_notify_cq(cq_.get(), 0);
    out.push_back({udp_.get(), POLLIN, 0});
    if (cc_) out.push_back({cc_->fd, POLLIN, 0});
}

void DgramSocket::disarm_locked() {
    if (cc_) drain_cq_events(cc_.get());
}

void DgramSocket::disarm() {
    std::lock_guard lk(mu_);
    disarm_locked();
}

}  // namespace softrdma::rs
