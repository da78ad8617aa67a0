// SPDX-License-Identifier: BSD-2-Clause
#include "rsocket/stream_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "rsocket/keepalive.h"
#include "rsocket/socket_table.h"

namespace softrdma::rs {
namespace {

constexpr uint32_t kMaxTransfer = 64 << 10;  // one write at most: keeps the ring turning
constexpr uint32_t kCtrlReserve = 16;        // receives and sends kept for control messages
// A signalled completion retires every write before it: its wr_id says how many writes and
// how many staged bytes that is (bit 63 marks a control send).
constexpr uint64_t kCtrlTag = 1ull << 63;
constexpr uint32_t kSignalEvery = 16;
uint64_t retire_id(uint32_t wrs, uint32_t bytes) {
    return uint64_t(wrs) << 32 | bytes;
}
constexpr int kResolveMs = 2000;
constexpr uint64_t kSpinNs = 20'000;  // poll before sleeping: a wake-up costs more
constexpr int kCloseWaitMs = 5000;
constexpr size_t kSendLowat = 2048;  // staging space worth a write (rdma-core's RS_SNDLOWAT)

void set_nonblock(int fd) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

size_t iov_total(const iovec *iov, int iovcnt) {
    size_t n = 0;
    for (int i = 0; i < iovcnt; ++i) n += iov[i].iov_len;
    return n;
}

// Copy n bytes of the iovec list, starting skip bytes in, to dst.
void gather(uint8_t *dst, const iovec *iov, int iovcnt, size_t skip, size_t n) {
    for (int i = 0; i < iovcnt && n; ++i) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        const size_t k = std::min(n, iov[i].iov_len - skip);
        std::memcpy(dst, static_cast<const uint8_t *>(iov[i].iov_base) + skip, k);
        dst += k;
        n -= k;
        skip = 0;
    }
}

socklen_t addr_len(const sockaddr *a) {
    return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

int copy_addr(const sockaddr *src, sockaddr *dst, socklen_t *len) {
    if (!dst || !len) return fail(EFAULT);
    const socklen_t n = addr_len(src);
    std::memcpy(dst, src, std::min(*len, n));
    *len = n;
    return 0;
}

// The CM reports failures in events; sockets report them in errno.
int event_errno(const rdma_cm_event &ev) {
    switch (ev.event) {
        case RDMA_CM_EVENT_REJECTED:
            return ECONNREFUSED;
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
            return ev.status == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
        case RDMA_CM_EVENT_UNREACHABLE:
            return ev.status == -ETIMEDOUT ? ETIMEDOUT : ECONNREFUSED;
        case RDMA_CM_EVENT_CONNECT_ERROR:
            return ECONNREFUSED;
        default:
            return ECONNRESET;
    }
}

template <class T>
int get_opt(void *val, socklen_t *len, T v) {
    if (!val || !len) return fail(EFAULT);
    if (*len < sizeof(T)) return fail(EINVAL);
    std::memcpy(val, &v, sizeof(T));
    *len = sizeof(T);
    return 0;
}

bool int_opt(const void *val, socklen_t len, int &out) {
    if (!val || len < sizeof(int)) return false;
    std::memcpy(&out, val, sizeof(int));
    return true;
}

}  // namespace

std::shared_ptr<StreamSocket> StreamSocket::create(int domain) {
    auto s = std::make_shared<StreamSocket>(Key{});
    if (!s->init_new(domain)) return nullptr;
    return s;
}

bool StreamSocket::init_new(int domain) {
    domain_ = domain;
    ch_.reset(rdma_create_event_channel());
    if (!ch_) return false;
    set_nonblock(ch_->fd);
    rdma_cm_id *id = nullptr;
    if (rdma_create_id(ch_.get(), &id, this, RDMA_PS_TCP) != 0) return false;
    id_.reset(id);
    fd_ = ch_->fd;
    return true;
}

StreamSocket::~StreamSocket() {
    // The QP goes first: it refers to the CQ, the PD and the registered buffers.
    if (id_ && id_->qp) rdma_destroy_qp(id_.get());
    requests_.clear();
}

// ---- resources -------------------------------------------------------------------------------

int StreamSocket::setup_qp(rdma_cm_id *id) {
    ibv_context *verbs = id->verbs;
    pd_.reset(ibv_alloc_pd(verbs));
    cc_.reset(pd_ ? ibv_create_comp_channel(verbs) : nullptr);
    if (!cc_) return -1;
    set_nonblock(cc_->fd);
    rq_total_ = opt_.rq_size + kCtrlReserve + opt_.iomap_size;
    const uint32_t sq_total = opt_.sq_size + kCtrlReserve + opt_.iomap_size;
    cq_.reset(ibv_create_cq(verbs, int(sq_total + rq_total_), nullptr, cc_.get(), 0));
    if (!cq_) return -1;

    ibv_qp_init_attr qa{};
    qa.send_cq = cq_.get();
    qa.recv_cq = cq_.get();
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;  // writes are signalled in batches: fewer completions to take
    qa.cap.max_send_wr = sq_total;
    qa.cap.max_recv_wr = rq_total_;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = std::max<uint32_t>(opt_.inline_size, wire::kRsCtrlLen);
    if (rdma_create_qp(id, pd_.get(), &qa) != 0) return -1;
    opt_.inline_size = std::min(opt_.inline_size, qa.cap.max_inline_data);

    ring_size_ = opt_.rbuf_size;
    ring_ = std::make_unique_for_overwrite<uint8_t[]>(ring_size_);
    ring_mr_.reset(ibv_reg_mr(pd_.get(), ring_.get(), ring_size_,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    sbuf_ = std::make_unique_for_overwrite<uint8_t[]>(opt_.sbuf_size);
    sbuf_mr_.reset(ibv_reg_mr(pd_.get(), sbuf_.get(), opt_.sbuf_size, IBV_ACCESS_LOCAL_WRITE));
    slots_ = std::make_unique_for_overwrite<uint8_t[]>(size_t(rq_total_) * wire::kRsCtrlLen);
    slots_mr_.reset(ibv_reg_mr(pd_.get(), slots_.get(), size_t(rq_total_) * wire::kRsCtrlLen,
                               IBV_ACCESS_LOCAL_WRITE));
    if (!ring_mr_ || !sbuf_mr_ || !slots_mr_) return -1;
    remote_iomap_.resize(opt_.iomap_size);  // how many of its buffers the peer may map to us
    for (uint32_t i = 0; i < rq_total_; ++i) repost_recv(i);
    return 0;
}

wire::RsConnData StreamSocket::local_conn_data() const {
    wire::RsConnData c;
    c.credits = uint16_t(opt_.rq_size);
    c.iomap_size = uint8_t(opt_.iomap_size);
    c.ring_addr = reinterpret_cast<uintptr_t>(ring_.get());
    c.ring_rkey = ring_mr_->rkey;
    c.ring_size = ring_size_;
    return c;
}

bool StreamSocket::take_peer_conn_data(const void *data, uint8_t len) {
    if (!data) return false;
    if (!wire::decode_rs_conn_data({static_cast<const uint8_t *>(data), len}, peer_)) return false;
    tx_byte_limit_ = peer_.ring_size;
    tx_msg_limit_ = peer_.credits;
    return true;
}

void StreamSocket::repost_recv(uint32_t slot) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(slots_.get() + size_t(slot) * wire::kRsCtrlLen),
                uint32_t(wire::kRsCtrlLen), slots_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    if (ibv_post_recv(id_->qp, &wr, &bad) != 0) set_failed(ECONNRESET);
}

// ---- progress --------------------------------------------------------------------------------

void StreamSocket::set_failed(int err) {
    if (!err_) err_ = err;
    disconnected_ = true;
}

bool StreamSocket::progress() {
    // A connected socket hears of a disconnect from its CQ as well (the receives flush), so
    // its CM channel, a system call per look, is read when a sleep saw it stir, and now and
    // then besides.
    const bool cm =
        (!connected() || disconnected_ || cm_stirred_ || ++cm_skips_ % 1024 == 0) && poll_cm();
    cm_stirred_ = false;
    const bool cq = poll_cq();
    if (credit_owed_) maybe_send_credit();
    if (iomap_unsent_ && connected() && !disconnected_) announce_iomaps();
    return cm || cq;
}

bool StreamSocket::poll_cq() {
    if (!cq_) return false;
    ibv_wc wc[32];
    bool any = false;
    for (;;) {
        const int n = ibv_poll_cq(cq_.get(), 32, wc);
        if (n <= 0) break;
        any = true;
        for (int i = 0; i < n; ++i) {
            const ibv_wc &w = wc[i];
            if (w.opcode & IBV_WC_RECV) {
                if (w.status != IBV_WC_SUCCESS) {
                    // A flushed receive is the QP going down: the peer left or we did.
                    set_failed(w.status == IBV_WC_WR_FLUSH_ERR ? 0 : ECONNRESET);
                    continue;
                }
                handle_recv(w);
            } else {
                // A message the peer never acknowledged: it is gone (TCP says ETIMEDOUT).
                if (w.status != IBV_WC_SUCCESS)
                    set_failed(w.status == IBV_WC_WR_FLUSH_ERR    ? 0
                               : w.status == IBV_WC_RETRY_EXC_ERR ? ETIMEDOUT
                                                                  : ECONNRESET);
                if (w.wr_id & kCtrlTag) --ctrl_inflight_;
                data_inflight_ -= uint32_t(w.wr_id >> 32) & 0xffff;
                sbuf_tail_ += uint32_t(w.wr_id);
            }
        }
        if (n < 32) break;
    }
    return any;
}

// A peer that breaks the protocol loses the connection, as a TCP peer gets a reset: the
// application sees ECONNRESET (or EOF for what it has read by then), nothing else happens.
void StreamSocket::protocol_broken() {
    set_failed(ECONNRESET);
    rdma_disconnect(id_.get());
}

void StreamSocket::handle_recv(const ibv_wc &w) {
    const auto slot = uint32_t(w.wr_id);
    if (w.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        const uint32_t imm = ntohl(w.imm_data);
        const uint32_t v = wire::rs_imm_value(imm);
        switch (wire::rs_imm_op(imm)) {
            case wire::RsOp::kData:
                // More than the ring holds is a peer that does not follow the protocol.
                if (v != w.byte_len || rx_end_ + v - rx_head_ > ring_size_) {
                    protocol_broken();
                    return;
                }
                rx_end_ += v;
                break;
            default:
                protocol_broken();
                return;
        }
        ++rx_msgs_;
        if (rx_msgs_ - credit_msgs_sent_ >= opt_.rq_size / 2) credit_owed_ = true;
    } else {
        wire::RsCtrlMsg m;
        const uint8_t *p = slots_.get() + size_t(slot) * wire::kRsCtrlLen;
        if (!wire::decode_rs_ctrl({p, w.byte_len}, m)) {
            protocol_broken();
            return;
        }
        switch (m.type) {
            case wire::RsCtrl::kCredit:
                // Cumulative counts: a stale or repeated update never lowers the limits.
                tx_byte_limit_ = std::max(tx_byte_limit_, m.a + peer_.ring_size);
                tx_msg_limit_ = std::max(tx_msg_limit_, m.b);
                break;
            case wire::RsCtrl::kShutdown:
                peer_eof_ = true;
                break;
            case wire::RsCtrl::kKeepalive:
                break;
            case wire::RsCtrl::kIomap:
                for (auto &e : remote_iomap_) {
                    if (e.len == 0 || e.offset == m.a) {
                        e.offset = m.a;
                        e.addr = m.b;
                        e.rkey = m.c;
                        e.len = m.d;
                        break;
                    }
                }
                break;
        }
    }
    repost_recv(slot);
}

void StreamSocket::maybe_send_credit() {
    credit_owed_ = true;
    if (!connected() || disconnected_) return;
    const bool bytes = rx_head_ - credit_bytes_sent_ >= ring_size_ / 2;
    const bool msgs = rx_msgs_ - credit_msgs_sent_ >= opt_.rq_size / 2;
    if (!bytes && !msgs) {
        credit_owed_ = false;
        return;
    }
    wire::RsCtrlMsg m;
    m.type = wire::RsCtrl::kCredit;
    m.a = rx_head_;
    m.b = rx_msgs_ + opt_.rq_size;
    if (!send_ctrl(m)) return;  // no send slot now: the next progress tries again
    credit_bytes_sent_ = rx_head_;
    credit_msgs_sent_ = rx_msgs_;
    credit_owed_ = false;
}

bool StreamSocket::send_ctrl(const wire::RsCtrlMsg &m) {
    if (ctrl_inflight_ >= kCtrlReserve + opt_.iomap_size) return false;
    uint8_t buf[wire::kRsCtrlLen];
    wire::encode_rs_ctrl(m, buf);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), uint32_t(sizeof buf), 0};
    ibv_send_wr wr{};
    wr.wr_id = kCtrlTag | retire_id(unsignalled_wrs_, unsignalled_bytes_);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    ibv_send_wr *bad = nullptr;
    if (ibv_post_send(id_->qp, &wr, &bad) != 0) {
        set_failed(ECONNRESET);
        return false;
    }
    ++ctrl_inflight_;
    unsignalled_wrs_ = 0;
    unsignalled_bytes_ = 0;
    return true;
}

bool StreamSocket::poll_cm() {
    bool any = false;
    rdma_cm_event *raw = nullptr;
    while (rdma_get_cm_event(ch_.get(), &raw) == 0) {
        any = true;
        CmEventPtr ev(raw);
        if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            if (state_ == State::kListening)
                requests_.push_back(std::move(ev));
            else
                rdma_reject(ev->id, nullptr, 0);
            continue;
        }
        on_cm_event(*ev);
    }
    return any;
}

void StreamSocket::on_cm_event(rdma_cm_event &ev) {
    switch (ev.event) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
            if (state_ != State::kResolvingAddr) return;
            if (rdma_resolve_route(id_.get(), kResolveMs) != 0) {
                state_ = State::kFailed;
                err_ = errno;
                return;
            }
            state_ = State::kResolvingRoute;
            return;
        case RDMA_CM_EVENT_ROUTE_RESOLVED: {
            if (state_ != State::kResolvingRoute) return;
            if (setup_qp(id_.get()) != 0) {
                state_ = State::kFailed;
                err_ = errno ? errno : ENOMEM;
                return;
            }
            uint8_t pd[wire::kRsConnDataLen];
            wire::encode_rs_conn_data(local_conn_data(), pd);
            rdma_conn_param p{};
            p.private_data = pd;
            p.private_data_len = sizeof pd;
            p.responder_resources = 1;
            p.initiator_depth = 1;
            p.retry_count = 7;
            p.rnr_retry_count = 7;
            if (rdma_connect(id_.get(), &p) != 0) {
                state_ = State::kFailed;
                err_ = errno;
                return;
            }
            state_ = State::kConnecting;
            return;
        }
        case RDMA_CM_EVENT_ESTABLISHED:
            if (state_ == State::kConnecting) {
                if (!take_peer_conn_data(ev.param.conn.private_data,
                                         ev.param.conn.private_data_len)) {
                    // Not an rsocket on the other side.
                    rdma_disconnect(id_.get());
                    state_ = State::kFailed;
                    err_ = ECONNREFUSED;
                    return;
                }
                state_ = State::kConnected;
            } else if (state_ == State::kAccepting) {
                state_ = State::kConnected;
            }
            return;
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
        case RDMA_CM_EVENT_TIMEWAIT_EXIT:
            if (state_ == State::kConnected) {
                disconnected_ = true;
            } else if (state_ != State::kListening) {
                state_ = State::kFailed;
                if (!err_) err_ = ECONNRESET;
            }
            return;
        case RDMA_CM_EVENT_REJECTED:
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_CONNECT_ERROR:
            if (state_ == State::kConnected) {
                set_failed(ECONNRESET);
            } else if (state_ != State::kListening) {
                state_ = State::kFailed;
                err_ = event_errno(ev);
            }
            return;
        default:
            return;
    }
}

int StreamSocket::wait(Lock &lk) {
    const uint64_t until = now_ns() + kSpinNs;
    do {
        if (progress()) return 0;
    } while (now_ns() < until);
    if (cq_) ibv_req_notify_cq(cq_.get(), 0);
    if (progress()) return 0;  // it came between the last look and the arming

    pollfd p[2] = {{ch_->fd, POLLIN, 0}, {cc_ ? cc_->fd : -1, POLLIN, 0}};
    // Another thread sleeping on the same socket may take the wake-up meant for us: then
    // look again soon rather than sleep on.
    ++waiters_;
    const int timeout = waiters_ > 1 ? 1 : -1;
    lk.unlock();
    const int r = ::poll(p, 2, timeout);
    const int e = errno;
    lk.lock();
    --waiters_;
    if (r > 0 && p[0].revents) cm_stirred_ = true;
    if (cc_) drain_cq_events(cc_.get());
    if (r < 0 && e == EINTR) return fail(EINTR);
    return 0;
}

// ---- connecting ------------------------------------------------------------------------------

int StreamSocket::bind(const sockaddr *addr, socklen_t len) {
    std::lock_guard lk(mu_);
    if (!addr || len < sizeof(sockaddr_in)) return fail(EINVAL);
    if (state_ != State::kIdle) return fail(EINVAL);
    if (opt_.reuseaddr) {
        int one = 1;
        rdma_set_option(id_.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one);
    }
    if (addr->sa_family == AF_INET6) {
        int v6only = opt_.v6only;
        rdma_set_option(id_.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v6only, sizeof v6only);
    }
    if (rdma_bind_addr(id_.get(), const_cast<sockaddr *>(addr)) != 0) return -1;
    state_ = State::kBound;
    return 0;
}

int StreamSocket::listen(int backlog) {
    std::lock_guard lk(mu_);
    if (state_ == State::kListening) return 0;
    if (state_ == State::kIdle) {
        sockaddr_storage any{};
        any.ss_family = sa_family_t(domain_);
        if (rdma_bind_addr(id_.get(), reinterpret_cast<sockaddr *>(&any)) != 0) return -1;
        state_ = State::kBound;
    }
    if (state_ != State::kBound) return fail(EINVAL);
    if (rdma_listen(id_.get(), backlog > 0 ? backlog : 128) != 0) return -1;
    state_ = State::kListening;
    return 0;
}

int StreamSocket::accept(sockaddr *addr, socklen_t *len) {
    Lock lk(mu_);
    if (state_ != State::kListening) return fail(EINVAL);
    for (;;) {
        poll_cm();
        while (!requests_.empty()) {
            CmEventPtr ev = std::move(requests_.front());
            requests_.erase(requests_.begin());
            rdma_cm_id *cid = ev->id;
            auto child = std::make_shared<StreamSocket>(Key{});
            child->domain_ = domain_;
            child->opt_ = opt_;
            child->nonblock_ = false;
            if (!child->take_peer_conn_data(ev->param.conn.private_data,
                                            ev->param.conn.private_data_len)) {
                // Someone who does not speak rsockets: refuse them, wait for the next.
                rdma_reject(cid, nullptr, 0);
                ev.reset();
                rdma_destroy_id(cid);
                continue;
            }
            ev.reset();  // acked: the id may now move to the child's own channel
            child->ch_.reset(rdma_create_event_channel());
            if (!child->ch_ || rdma_migrate_id(cid, child->ch_.get()) != 0) {
                rdma_reject(cid, nullptr, 0);
                rdma_destroy_id(cid);
                continue;
            }
            child->id_.reset(cid);  // the child owns it from here, on its own channel
            if (child->setup_qp(cid) != 0) {
                rdma_reject(cid, nullptr, 0);
                continue;
            }
            set_nonblock(child->ch_->fd);
            child->fd_ = child->ch_->fd;
            uint8_t pd[wire::kRsConnDataLen];
            wire::encode_rs_conn_data(child->local_conn_data(), pd);
            rdma_conn_param p{};
            p.private_data = pd;
            p.private_data_len = sizeof pd;
            p.responder_resources = 1;
            p.initiator_depth = 1;
            p.rnr_retry_count = 7;
            if (rdma_accept(cid, &p) != 0) continue;
            child->state_ = State::kAccepting;
            const sockaddr *peer = rdma_get_peer_addr(cid);
            std::memcpy(&child->peer_addr_, peer, addr_len(peer));
            if (addr && len) copy_addr(peer, addr, len);
            const int fd = child->fd_;
            if (child->opt_.keepalive) watch_keepalive(child);
            register_socket(std::move(child));
            return fd;
        }
        if (nonblock_) return fail(EAGAIN);
        pollfd p{ch_->fd, POLLIN, 0};
        lk.unlock();
        const int r = ::poll(&p, 1, -1);
        const int e = errno;
        lk.lock();
        if (r < 0 && e == EINTR) return fail(EINTR);
        if (state_ != State::kListening) return fail(EINVAL);
    }
}

int StreamSocket::connect(const sockaddr *addr, socklen_t len) {
    Lock lk(mu_);
    if (!addr || len < sizeof(sockaddr_in)) return fail(EINVAL);
    switch (state_) {
        case State::kIdle:
        case State::kBound:
            break;
        case State::kConnected:
            return fail(EISCONN);
        case State::kListening:
            return fail(EINVAL);
        case State::kFailed:
            return fail(err_ ? err_ : ECONNREFUSED);
        default:
            return fail(nonblock_ ? EALREADY : EINVAL);
    }
    std::memcpy(&peer_addr_, addr, addr_len(addr));
    const sockaddr *src = state_ == State::kBound ? rdma_get_local_addr(id_.get()) : nullptr;
    if (rdma_resolve_addr(id_.get(), const_cast<sockaddr *>(src), const_cast<sockaddr *>(addr),
                          kResolveMs) != 0)
        return -1;
    state_ = State::kResolvingAddr;
    if (nonblock_) {
        progress();
        if (connected()) return 0;
        if (state_ == State::kFailed) return fail(err_);
        return fail(EINPROGRESS);
    }
    return wait_connected(lk);
}

int StreamSocket::wait_connected(Lock &lk) {
    for (;;) {
        progress();
        if (connected()) return 0;
        if (state_ == State::kFailed) {
            const int e = err_ ? err_ : ECONNREFUSED;
            err_ = 0;
            return fail(e);
        }
        if (nonblock_) return fail(EAGAIN);
        if (wait(lk) != 0) return -1;
    }
}

// A data call on a socket still connecting drives the connect (or finds it failed).
int StreamSocket::usable(Lock &lk) {
    if (state_ == State::kResolvingAddr || state_ == State::kResolvingRoute ||
        state_ == State::kConnecting || state_ == State::kAccepting) {
        if (wait_connected(lk) != 0) return -1;  // EAGAIN, or why the connection failed
    }
    if (!connected()) return fail(state_ == State::kFailed ? ECONNRESET : ENOTCONN);
    return 0;
}

// ---- data ------------------------------------------------------------------------------------

size_t StreamSocket::send_room(size_t want, bool &inl) const {
    inl = false;
    if (tx_msgs_ >= tx_msg_limit_ || data_inflight_ >= opt_.sq_size) return 0;
    const uint64_t pos = tx_placed_ % peer_.ring_size;
    size_t n = std::min<uint64_t>(tx_byte_limit_ - tx_placed_, peer_.ring_size - pos);
    n = std::min<size_t>({n, want, kMaxTransfer});
    if (n <= opt_.inline_size) {
        inl = true;  // no staging needed
        return n;
    }
    const uint64_t contig = opt_.sbuf_size - sbuf_head_ % opt_.sbuf_size;
    const size_t m = staging_room(n);
    // Not a sliver of staging space either: a write that small costs as much as a large one.
    // Only the end of the staging ring, once per turn, may give less.
    if (m < std::min<size_t>(n, kSendLowat) && m != contig) return 0;
    return m;
}

// Of n bytes, how many fit the staging ring without wrapping.
size_t StreamSocket::staging_room(size_t n) const {
    const uint64_t used = sbuf_head_ - sbuf_tail_;
    return std::min<uint64_t>(
        {n, opt_.sbuf_size - used, opt_.sbuf_size - sbuf_head_ % opt_.sbuf_size});
}

// Copies n bytes of the iovec list (skip bytes in) into the staging ring: the sge that sends
// them from there.
ibv_sge StreamSocket::stage(const iovec *iov, int iovcnt, size_t skip, size_t n) {
    uint8_t *dst = sbuf_.get() + sbuf_head_ % opt_.sbuf_size;
    gather(dst, iov, iovcnt, skip, n);
    sbuf_head_ += n;
    return {reinterpret_cast<uintptr_t>(dst), uint32_t(n), sbuf_mr_->lkey};
}

void StreamSocket::post_data(const iovec *iov, int iovcnt, size_t skip, size_t n, bool inl) {
    uint8_t small[1024];
    ibv_sge sge{};
    uint32_t staged = 0;
    if (inl) {
        // One iovec piece goes out as it is; pieces are gathered first.
        size_t k = skip;
        int i = 0;
        while (i < iovcnt && k >= iov[i].iov_len) k -= iov[i++].iov_len;
        if (i < iovcnt && iov[i].iov_len - k >= n) {
            sge.addr = reinterpret_cast<uintptr_t>(iov[i].iov_base) + k;
        } else {
            gather(small, iov, iovcnt, skip, n);
            sge.addr = reinterpret_cast<uintptr_t>(small);
        }
    } else {
        sge = stage(iov, iovcnt, skip, n);
        staged = uint32_t(n);
    }
    sge.length = uint32_t(n);
    if (post_write(sge, IBV_WR_RDMA_WRITE_WITH_IMM, peer_.ring_addr + tx_placed_ % peer_.ring_size,
                   peer_.ring_rkey, htonl(wire::rs_imm(wire::RsOp::kData, uint32_t(n))), staged,
                   inl)) {
        tx_placed_ += n;
        ++tx_msgs_;
    }
}

bool StreamSocket::post_write(ibv_sge &sge, ibv_wr_opcode op, uint64_t remote_addr, uint32_t rkey,
                              uint32_t imm_be, uint32_t staged, bool inl) {
    const uint32_t every = std::min(kSignalEvery, std::max(opt_.sq_size / 2, 1u));
    const bool signal = unsignalled_wrs_ + 1 >= every ||
                        unsignalled_bytes_ + staged >= opt_.sbuf_size / 8 ||
                        data_inflight_ + 1 >= opt_.sq_size;
    ibv_send_wr wr{};
    wr.wr_id = retire_id(unsignalled_wrs_ + 1, unsignalled_bytes_ + staged);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.imm_data = imm_be;
    wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | (inl ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr *bad = nullptr;
    if (ibv_post_send(id_->qp, &wr, &bad) != 0) {
        set_failed(ECONNRESET);
        return false;
    }
    ++data_inflight_;
    if (signal) {
        unsignalled_wrs_ = 0;
        unsignalled_bytes_ = 0;
    } else {
        ++unsignalled_wrs_;
        unsignalled_bytes_ += staged;
    }
    return true;
}

ssize_t StreamSocket::sendmsg(const iovec *iov, int iovcnt, int flags, const sockaddr *,
                              socklen_t) {
    Lock lk(mu_);
    if (usable(lk) != 0) return -1;
    const size_t total = iov_total(iov, iovcnt);
    const bool dontwait = nonblock_ || (flags & MSG_DONTWAIT);
    size_t done = 0;
    while (done < total || total == 0) {
        if (wr_shut_) return fail(EPIPE);
        if (disconnected_) {
            if (done) break;
            return fail(err_ ? err_ : EPIPE);
        }
        if (total == 0) break;
        bool inl = false;
        const size_t n = send_room(total - done, inl);
        if (n == 0) {
            if (progress()) continue;
            if (dontwait) {
                if (done) break;
                return fail(EAGAIN);
            }
            if (wait(lk) != 0) {
                if (done) break;
                return -1;
            }
            continue;
        }
        post_data(iov, iovcnt, done, n, inl);
        done += n;
    }
    return ssize_t(done);
}

size_t StreamSocket::copy_out(const iovec *iov, int iovcnt, size_t total, bool peek) {
    size_t n = std::min<uint64_t>(total, rx_end_ - rx_head_);
    uint64_t at = rx_head_;
    size_t left = n;
    for (int i = 0; i < iovcnt && left; ++i) {
        auto *dst = static_cast<uint8_t *>(iov[i].iov_base);
        size_t room = std::min(iov[i].iov_len, left);
        while (room) {
            const size_t pos = at % ring_size_;
            const size_t k = std::min<size_t>(room, ring_size_ - pos);
            std::memcpy(dst, ring_.get() + pos, k);
            dst += k;
            at += k;
            room -= k;
            left -= k;
        }
    }
    if (!peek) {
        rx_head_ += n;
        if (rx_head_ - credit_bytes_sent_ >= ring_size_ / 2) maybe_send_credit();
    }
    return n;
}

ssize_t StreamSocket::recvmsg(const iovec *iov, int iovcnt, int flags, sockaddr *from,
                              socklen_t *fromlen) {
    Lock lk(mu_);
    if (usable(lk) != 0) return -1;
    const size_t total = iov_total(iov, iovcnt);
    const bool dontwait = nonblock_ || (flags & MSG_DONTWAIT);
    const bool waitall = (flags & MSG_WAITALL) && !(flags & MSG_PEEK);
    size_t done = 0;
    for (;;) {
        if (rx_end_ == rx_head_) progress();
        if (rx_end_ != rx_head_ && !rd_shut_) {
            if (done == 0) {
                done = copy_out(iov, iovcnt, total, flags & MSG_PEEK);
            } else {
                // MSG_WAITALL: fill the rest of the caller's buffers.
                iovec rest[64];
                int k = 0;
                size_t skip = done;
                for (int i = 0; i < iovcnt && k < 64; ++i) {
                    if (skip >= iov[i].iov_len) {
                        skip -= iov[i].iov_len;
                        continue;
                    }
                    rest[k++] = {static_cast<uint8_t *>(iov[i].iov_base) + skip,
                                 iov[i].iov_len - skip};
                    skip = 0;
                }
                done += copy_out(rest, k, total - done, false);
            }
            if (!waitall || done == total) break;
            continue;
        }
        if (total == 0 || rd_shut_ || peer_eof_ || disconnected_) break;
        if (dontwait) {
            if (done) break;
            return fail(EAGAIN);
        }
        if (wait(lk) != 0) {
            if (done) break;
            return -1;
        }
    }
    if (from && fromlen) copy_addr(reinterpret_cast<sockaddr *>(&peer_addr_), from, fromlen);
    return ssize_t(done);
}

int StreamSocket::shutdown(int how) {
    Lock lk(mu_);
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return fail(EINVAL);
    if (!connected()) return fail(ENOTCONN);
    if (how != SHUT_WR) rd_shut_ = true;
    if (how != SHUT_RD && !wr_shut_ && !disconnected_) {
        wire::RsCtrlMsg m;
        m.type = wire::RsCtrl::kShutdown;
        while (!send_ctrl(m) && !disconnected_) {
            if (wait(lk) != 0) break;
        }
        wr_shut_ = true;
    }
    return 0;
}

void StreamSocket::close_gracefully() {
    Lock lk(mu_);
    if (state_ == State::kListening) {
        // Requests never accepted are refused, as a closing TCP listener resets them.
        for (auto &ev : requests_) {
            rdma_cm_id *cid = ev->id;
            rdma_reject(cid, nullptr, 0);
            ev.reset();
            rdma_destroy_id(cid);
        }
        requests_.clear();
        return;
    }
    if (!connected() || disconnected_) return;
    if (!wr_shut_) {
        wire::RsCtrlMsg m;
        m.type = wire::RsCtrl::kShutdown;
        if (send_ctrl(m)) wr_shut_ = true;
    }
    // Everything we wrote is acknowledged before the connection goes: a peer reading slowly
    // still gets every byte, as a TCP close delivers what was sent.
    const uint64_t until = now_ns() + uint64_t(kCloseWaitMs) * 1'000'000;
    while ((data_inflight_ || ctrl_inflight_) && !disconnected_ && now_ns() < until) {
        if (!progress()) {
            lk.unlock();
            struct timespec ts {
                0, 50'000
            };
            nanosleep(&ts, nullptr);
            lk.lock();
        }
    }
    rdma_disconnect(id_.get());
}

void StreamSocket::keepalive_tick(uint64_t now_s) {
    std::lock_guard lk(mu_);
    if (!opt_.keepalive || !connected() || disconnected_) return;
    progress();  // an earlier keepalive's failure lands here
    if (now_s - keepalive_sent_s_ < uint64_t(opt_.keepidle)) return;
    wire::RsCtrlMsg m;
    m.type = wire::RsCtrl::kKeepalive;
    if (send_ctrl(m)) keepalive_sent_s_ = now_s;
}

// ---- addresses and options -------------------------------------------------------------------

int StreamSocket::getpeername(sockaddr *addr, socklen_t *len) {
    std::lock_guard lk(mu_);
    if (state_ != State::kConnected && state_ != State::kAccepting) return fail(ENOTCONN);
    return copy_addr(reinterpret_cast<const sockaddr *>(&peer_addr_), addr, len);
}

int StreamSocket::getsockname(sockaddr *addr, socklen_t *len) {
    std::lock_guard lk(mu_);
    const sockaddr *local = rdma_get_local_addr(id_.get());
    if (local->sa_family == 0) {
        sockaddr_storage any{};
        any.ss_family = sa_family_t(domain_);
        return copy_addr(reinterpret_cast<const sockaddr *>(&any), addr, len);
    }
    return copy_addr(local, addr, len);
}

int StreamSocket::setsockopt(int level, int name, const void *val, socklen_t len) {
    std::lock_guard lk(mu_);
    int v = 0;
    if (level == SOL_SOCKET) {
        switch (name) {
            case SO_REUSEADDR:
                if (!int_opt(val, len, v)) return fail(EINVAL);
                opt_.reuseaddr = v != 0;
                return 0;
            case SO_RCVBUF:
            case SO_SNDBUF: {
                if (!int_opt(val, len, v)) return fail(EINVAL);
                if (cq_) return 0;  // the rings are sized at connect
                // As TCP doubles the request; the ring keeps to what an immediate can describe.
                const uint32_t size =
                    std::clamp<uint32_t>(uint32_t(std::max(v, 0)) * 2, 4096, 64u << 20);
                (name == SO_RCVBUF ? opt_.rbuf_size : opt_.sbuf_size) = size;
                return 0;
            }
            case SO_KEEPALIVE:
                if (!int_opt(val, len, v)) return fail(EINVAL);
                opt_.keepalive = v != 0;
                return 0;
            case SO_OOBINLINE:
                if (!int_opt(val, len, v)) return fail(EINVAL);
                opt_.oobinline = v != 0;
                return 0;
            case SO_LINGER:
                if (!val || len < sizeof(linger)) return fail(EINVAL);
                std::memcpy(&opt_.linger_opt, val, sizeof(linger));
                return 0;
            default:
                return fail(ENOTSUP);
        }
    }
    if (level == IPPROTO_TCP) {
        switch (name) {
            case TCP_NODELAY:
                // Every send is its own write already: nothing waits to be coalesced.
                if (!int_opt(val, len, v)) return fail(EINVAL);
                opt_.nodelay = v != 0;
                return 0;
            case TCP_KEEPIDLE:
                if (!int_opt(val, len, v) || v <= 0) return fail(EINVAL);
                opt_.keepidle = v;
                return 0;
            case TCP_MAXSEG:
            case TCP_KEEPCNT:
            case TCP_KEEPINTVL:
            case TCP_CONGESTION:
                return 0;  // accepted, as rdma-core does: nothing here to tune
            default:
                return fail(ENOTSUP);
        }
    }
    if (level == IPPROTO_IP && name == IP_TOS) return 0;
    if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) {
        if (!int_opt(val, len, v)) return fail(EINVAL);
        opt_.v6only = v != 0;
        return 0;
    }
    if (level == SOL_RDMA) {
        if (name == RDMA_ROUTE) return 0;  // routes are resolved from the address
        if (!val || len < sizeof(uint32_t)) return fail(EINVAL);
        if (cq_) return fail(EINVAL);  // the QP exists: too late
        uint32_t u;
        std::memcpy(&u, val, sizeof u);
        switch (name) {
            case RDMA_SQSIZE:
                opt_.sq_size = std::clamp<uint32_t>(u, 4, 4096);
                return 0;
            case RDMA_RQSIZE:
                opt_.rq_size = std::clamp<uint32_t>(u, 4, 4096);
                return 0;
            case RDMA_INLINE:
                opt_.inline_size = std::min<uint32_t>(u, 1024);
                return 0;
            case RDMA_IOMAPSIZE:
                opt_.iomap_size = std::min<uint32_t>(u, 255);
                return 0;
            default:
                return fail(ENOTSUP);
        }
    }
    return fail(ENOTSUP);
}

int StreamSocket::getsockopt(int level, int name, void *val, socklen_t *len) {
    std::lock_guard lk(mu_);
    if (level == SOL_SOCKET) {
        switch (name) {
            case SO_REUSEADDR:
                return get_opt<int>(val, len, opt_.reuseaddr);
            case SO_RCVBUF:
                return get_opt<int>(val, len, int(ring_size_ ? ring_size_ : opt_.rbuf_size));
            case SO_SNDBUF:
                return get_opt<int>(val, len, int(opt_.sbuf_size));
            case SO_KEEPALIVE:
                return get_opt<int>(val, len, opt_.keepalive);
            case SO_OOBINLINE:
                return get_opt<int>(val, len, opt_.oobinline);
            case SO_LINGER:
                return get_opt<linger>(val, len, opt_.linger_opt);
            case SO_ERROR: {
                progress();
                const int e = err_;
                err_ = 0;
                return get_opt<int>(val, len, e);
            }
            case SO_TYPE:
                return get_opt<int>(val, len, SOCK_STREAM);
            case SO_DOMAIN:
                return get_opt<int>(val, len, domain_);
            case SO_PROTOCOL:
                return get_opt<int>(val, len, IPPROTO_TCP);
            case SO_ACCEPTCONN:
                return get_opt<int>(val, len, state_ == State::kListening);
            default:
                return fail(ENOTSUP);
        }
    }
    if (level == IPPROTO_TCP) {
        switch (name) {
            case TCP_NODELAY:
                return get_opt<int>(val, len, opt_.nodelay);
            case TCP_MAXSEG:
                return get_opt<int>(val, len, int(kSendLowat));
            case TCP_INFO: {
                // What a TCP monitor (iperf3) reads: the state, and no retransmits ever (RC
                // over a reliable stream retransmits nothing of its own).
                if (!val || !len) return fail(EFAULT);
                tcp_info ti{};
                ti.tcpi_state = connected() && !disconnected_ ? TCP_ESTABLISHED : TCP_CLOSE;
                ti.tcpi_snd_mss = uint32_t(kSendLowat);
                ti.tcpi_rcv_mss = uint32_t(kSendLowat);
                ti.tcpi_pmtu = 4096;
                ti.tcpi_snd_cwnd = opt_.sq_size;
                ti.tcpi_rcv_space = ring_size_;
                const socklen_t n = std::min<socklen_t>(*len, sizeof ti);
                std::memcpy(val, &ti, n);
                *len = n;
                return 0;
            }
            case TCP_CONGESTION: {
                // The flow control is ours (credits), not a TCP algorithm's.
                static const char kName[] = "rsocket";
                if (!val || !len) return fail(EFAULT);
                const socklen_t n = std::min<socklen_t>(*len, sizeof kName);
                std::memcpy(val, kName, n);
                *len = n;
                return 0;
            }
            case TCP_KEEPIDLE:
                return get_opt<int>(val, len, opt_.keepidle);
            default:
                return fail(ENOTSUP);
        }
    }
    if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) return get_opt<int>(val, len, opt_.v6only);
    if (level == SOL_RDMA) {
        switch (name) {
            case RDMA_SQSIZE:
                return get_opt<uint32_t>(val, len, opt_.sq_size);
            case RDMA_RQSIZE:
                return get_opt<uint32_t>(val, len, opt_.rq_size);
            case RDMA_INLINE:
                return get_opt<uint32_t>(val, len, opt_.inline_size);
            case RDMA_IOMAPSIZE:
                return get_opt<uint32_t>(val, len, opt_.iomap_size);
            default:
                return fail(ENOTSUP);
        }
    }
    return fail(ENOTSUP);
}

int StreamSocket::fcntl_getfl() {
    std::lock_guard lk(mu_);
    return O_RDWR | (nonblock_ ? O_NONBLOCK : 0);
}

int StreamSocket::fcntl_setfl(int flags) {
    std::lock_guard lk(mu_);
    nonblock_ = (flags & O_NONBLOCK) != 0;
    return 0;
}

// ---- direct placement ------------------------------------------------------------------------

off_t StreamSocket::iomap(void *buf, size_t len, int prot, int, off_t offset) {
    Lock lk(mu_);
    if (prot != PROT_WRITE && prot != PROT_NONE) return fail(EINVAL);
    if (!buf || len == 0 || len > UINT32_MAX) return fail(EINVAL);
    if (!pd_) return fail(ENOTCONN);       // no connection resources yet
    if (prot == PROT_NONE) return offset;  // nothing the peer may write
    if (local_iomap_.size() >= peer_.iomap_size) return fail(ENOMEM);
    IomapEntry e;
    e.offset = offset == -1 ? reinterpret_cast<uintptr_t>(buf) : uint64_t(offset);
    e.addr = reinterpret_cast<uintptr_t>(buf);
    e.len = uint32_t(len);
    e.mr.reset(ibv_reg_mr(pd_.get(), buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!e.mr) return -1;
    e.rkey = e.mr->rkey;
    const off_t at = off_t(e.offset);
    local_iomap_.push_back(std::move(e));
    // Announced with the next progress once connected; the peer can use it after the data
    // that follows reaches it (RC keeps the order).
    iomap_unsent_ = true;
    progress();
    return at;
}

void StreamSocket::announce_iomaps() {
    for (auto &e : local_iomap_) {
        if (e.announced) continue;
        wire::RsCtrlMsg m;
        m.type = wire::RsCtrl::kIomap;
        m.a = e.offset;
        m.b = e.addr;
        m.c = e.rkey;
        m.d = e.len;
        if (!send_ctrl(m)) return;
        e.announced = true;
    }
    iomap_unsent_ = false;
}

int StreamSocket::iounmap(void *buf, size_t) {
    std::lock_guard lk(mu_);
    for (auto it = local_iomap_.begin(); it != local_iomap_.end(); ++it) {
        if (it->addr == reinterpret_cast<uintptr_t>(buf)) {
            local_iomap_.erase(it);
            return 0;
        }
    }
    return fail(EINVAL);
}

ssize_t StreamSocket::iowrite(const void *buf, size_t len, off_t offset, int flags) {
    Lock lk(mu_);
    if (state_ == State::kAccepting || state_ == State::kConnecting) wait_connected(lk);
    if (!connected()) return fail(ENOTCONN);
    const bool dontwait = nonblock_ || (flags & MSG_DONTWAIT);
    size_t done = 0;
    while (done < len) {
        // No look at the CQ unless something is missing: a program that spins on memory after
        // riowrite (riostream) would otherwise keep its engine standing by for a poller.
        if (disconnected_ || wr_shut_) {
            if (done) break;
            return fail(EPIPE);
        }
        const uint64_t at = uint64_t(offset) + done;
        const IomapEntry *target = nullptr;
        for (const auto &e : remote_iomap_)
            if (e.len && at >= e.offset && at < e.offset + e.len) target = &e;
        if (!target) {
            // The peer's riomap may still be on its way: it arrives with a control message.
            if (progress()) continue;
            if (dontwait || !opt_.iomap_size) {
                if (done) break;
                return fail(opt_.iomap_size ? EAGAIN : EINVAL);
            }
            if (wait(lk) != 0) return done ? ssize_t(done) : -1;
            continue;
        }
        size_t n = std::min<uint64_t>(len - done, target->offset + target->len - at);
        n = std::min<size_t>(n, kMaxTransfer);
        const bool inl = n <= opt_.inline_size;
        size_t room = 0;
        if (data_inflight_ < opt_.sq_size) room = inl ? n : staging_room(n);
        if (room == 0) {
            if (progress()) continue;
            if (dontwait) {
                if (done) break;
                return fail(EAGAIN);
            }
            if (wait(lk) != 0) return done ? ssize_t(done) : -1;
            continue;
        }
        n = room;
        ibv_sge sge{};
        uint32_t staged = 0;
        if (inl) {
            sge.addr = reinterpret_cast<uintptr_t>(buf) + done;
        } else {
            const iovec v{const_cast<void *>(buf), len};
            sge = stage(&v, 1, done, n);
            staged = uint32_t(n);
        }
        sge.length = uint32_t(n);
        // A plain write: the peer learns of it from memory or from a later rsend, which RC
        // ordering places after it; it takes none of the peer's receives.
        if (!post_write(sge, IBV_WR_RDMA_WRITE, target->addr + (at - target->offset), target->rkey,
                        0, staged, inl))
            break;
        done += n;
    }
    return ssize_t(done);
}

// ---- readiness -------------------------------------------------------------------------------

short StreamSocket::ready(short events) {
    std::lock_guard lk(mu_);
    progress();
    short r = 0;
    bool inl = false;
    switch (state_) {
        case State::kListening:
            if (!requests_.empty()) r |= POLLIN;
            break;
        case State::kConnected:
            if (rx_end_ != rx_head_ || peer_eof_ || disconnected_ || rd_shut_) r |= POLLIN;
            if (!wr_shut_ && !disconnected_ && send_room(SIZE_MAX, inl) > 0) r |= POLLOUT;
            if (disconnected_) r |= POLLHUP;
            if (err_) r |= POLLERR;
            break;
        case State::kFailed:
            r |= POLLERR | POLLHUP | POLLOUT | POLLIN;
            break;
        case State::kIdle:
        case State::kBound:
            r |= POLLOUT | POLLHUP;
            break;
        default:
            break;
    }
    return short(r & (events | POLLERR | POLLHUP | POLLNVAL));
}

void StreamSocket::arm(short, std::vector<pollfd> &out) {
    std::lock_guard lk(mu_);
    if (cq_) ibv_req_notify_cq(cq_.get(), 0);
    out.push_back({ch_->fd, POLLIN, 0});
    if (cc_) out.push_back({cc_->fd, POLLIN, 0});
}

void StreamSocket::disarm() {
    std::lock_guard lk(mu_);
    cm_stirred_ = true;  // rpoll slept on the CM channel too: the next look reads it
    if (cc_) drain_cq_events(cc_.get());
}

}  // namespace softrdma::rs
