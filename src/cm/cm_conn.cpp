// SPDX-License-Identifier: BSD-2-Clause
// Connection establishment over TCP + MPA (as iWARP does it): listen, connect, accept,
// reject, disconnect. The CM's TCP connection becomes the QP's stream.
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cm/cm_api.h"
#include "cm/cm_id.h"
#include "common/clock.h"
#include "common/log.h"
#include "transport/handshake_gate.h"
#include "transport/shm_link.h"
#include "transport/mpa_handshake.h"
#include "transport/progress_engine.h"
#include "verbs/context.h"
#include "verbs/qp.h"
#include "verbs/verbs_ops.h"

namespace softrdma::cm {

void register_child(const std::shared_ptr<CmId> &id);
std::function<void()> disconnect_hook(CmId &id);
std::function<void()> established_hook(CmId &id);

uint64_t cm_timeout_ns() {
    static const uint64_t ns = [] {
        const char *v = std::getenv("SOFTRDMA_CM_TIMEOUT_MS");
        const long ms = v ? std::atol(v) : 0;
        return uint64_t(ms > 0 ? ms : 30000) * 1000000ull;
    }();
    return ns;
}

namespace {

bool want_crc() {
    const char *v = std::getenv("SOFTRDMA_MPA_CRC");
    return v && std::strcmp(v, "1") == 0;
}

uint8_t clamp_rd(uint8_t v) {
    return std::min<uint8_t>(v, verbs::kMaxRdAtomic);
}

// rdma-core's rules for the READ depths of rdma_connect/rdma_accept on RDMA_PS_TCP ids: 0xFF
// (RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH) asks for the most the device allows, a larger
// explicit value is refused, 0 is allowed; a NULL parameter set needs a QP.
bool conn_param_valid(const CmId &id, const rdma_conn_param *p) {
    if (id.ps != RDMA_PS_TCP) return true;
    if (!p) return id.qp != nullptr;
    const auto ok = [](uint8_t v) { return v == 0xFF || v <= verbs::kMaxRdAtomic; };
    return ok(p->responder_resources) && ok(p->initiator_depth);
}

constexpr uint64_t kRefusedGraceNs = 1'000'000'000;  // re-dial a refused connect this long
constexpr uint64_t kRedialDelayNs = 5'000'000;

// After a disconnect the IB CM keeps the connection in timewait, then reports
// TIMEWAIT_EXIT: about the packet lifetime, 4.096 us * 2^(timeout + 1) (~2 s by default).
void enter_timewait(CmId &id) {
    const unsigned t = id.ack_timeout ? std::min<unsigned>(id.ack_timeout, 20) : 18;
    id.timewait_exit_ns = now_ns() + (4096ull << (t + 1));
    transport::ProgressEngine::get().schedule(id.shared_from_this(), id.timewait_exit_ns);
}

void qp_to_error(CmId &id);

// The QP's end of the connection was closed by the peer (or failed): DISCONNECTED.
void on_transport_closed(const std::weak_ptr<CmId> &weak) {
    auto id = weak.lock();
    if (!id) return;
    std::lock_guard lk(id->mu);
    if (id->state != State::kConnect) return;
    if (!id->established) {
        // Accepted, but the active side went away before its RTU: the IB CM's REJ from a
        // destroyed id.
        if (id->passive) {
            id->post_event(RDMA_CM_EVENT_REJECTED, kRejConsumerDefined);
            qp_to_error(*id);
        }
        return;
    }
    id->set_state(State::kDisconnect);
    id->post_event(RDMA_CM_EVENT_DISCONNECTED, 0);
    enter_timewait(*id);
}

// Moves the id's QP to RTR and RTS with the negotiated parameters. mu held.
int ready_qp(CmId &id) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = 1;  // the CM connection names the peer, not a QPN
    a.rq_psn = 0;
    a.max_dest_rd_atomic = clamp_rd(id.conn.responder_resources);
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.traffic_class = id.tos;
    a.ah_attr.grh.dgid = id.route.addr.addr.ibaddr.dgid;
    const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    const int rtr_uc = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    const bool rc = id.qp->qp_type == IBV_QPT_RC;
    if (int e = verbs::modify_qp(id.qp, &a, rc ? rtr : rtr_uc)) return e;
    std::memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = id.qp_timeout();
    a.retry_cnt = std::min<uint8_t>(id.conn.retry_count, 7);
    a.rnr_retry = std::min<uint8_t>(id.conn.rnr_retry_count, 7);
    a.sq_psn = 0;
    a.max_rd_atomic = clamp_rd(id.conn.initiator_depth);
    const int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    return verbs::modify_qp(id.qp, &a, rc ? rts : (IBV_QP_STATE | IBV_QP_SQ_PSN));
}

// Keeps a connected socket until the application's own QP takes it. A finished MPA exchange
// may leave it registered with the engine (for the QP to re-arm): a parked socket is not.
void park(CmId &id, transport::MpaHandshake::Result &r) {
    if (r.registered) transport::ProgressEngine::get().unwatch(r.fd.get());
    id.parked_fd = std::move(r.fd);
}

void qp_to_error(CmId &id) {
    ibv_qp *q = id.conn_qp();
    if (!q) return;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    verbs::modify_qp(q, &a, IBV_QP_STATE);
}

std::vector<uint8_t> mpa_frame(bool reply, bool reject, const wire::MpaFrame *req, uint8_t ird,
                               uint8_t ord, const void *pd, size_t len) {
    wire::MpaFrame f;
    f.reply = reply;
    f.flags = wire::kMpaFlagEnhanced;
    // Extensions and CRC only as the request offered (a reply never adds what was not asked).
    if (!req || (req->flags & wire::kMpaFlagSoftrdmaExt)) f.flags |= wire::kMpaFlagSoftrdmaExt;
    if (transport::shm_enabled() && (!req || (req->flags & wire::kMpaFlagSoftrdmaShm)))
        f.flags |= wire::kMpaFlagSoftrdmaShm;
    if ((req && (req->flags & wire::kMpaFlagCrc)) || want_crc()) f.flags |= wire::kMpaFlagCrc;
    if (reject) f.flags |= wire::kMpaFlagReject;
    f.ird = ird;
    f.ord = ord;
    if (len)
        f.private_data.assign(static_cast<const uint8_t *>(pd),
                              static_cast<const uint8_t *>(pd) + len);
    return wire::encode_mpa_frame(f);
}

}  // namespace

// ---------------------------------------------------------------------------- listen

// Accepts every connection as it comes, so the kernel's queue never fills with peers that will
// never send a request; the gate bounds and times out those that have not delivered one
// yet. The application's backlog counts only CONNECT_REQUESTs it has not answered: a complete
// request beyond it waits (up to the CM timeout) for room.
class Listener : public transport::Pollable, public std::enable_shared_from_this<Listener> {
  public:
    Listener(std::weak_ptr<CmId> id, int fd) : id_(std::move(id)), fd_(fd) {}
    void on_io(uint32_t) override;
    void on_timer() override;
    // Level-triggered: one accept per readiness, and no re-arming after each (an accept4
    // that found nothing and an epoll_ctl per connection, in a storm). Disarmed only while
    // the process is out of file descriptors.
    static constexpr uint32_t kEvents = EPOLLIN;
    void arm(uint32_t events) {
        transport::ProgressEngine::get().rearm(fd_, shared_from_this(), events);
    }
    // No accept after this returns: the id may close the socket.
    void stop() {
        std::lock_guard lk(accept_mu_);
        stopped_ = true;
    }

  private:
    void on_request(const std::shared_ptr<CmId> &lid, UniqueFd fd, const sockaddr_storage &peer,
                    socklen_t peer_len);
    std::weak_ptr<CmId> id_;
    // The (non-blocking) accept happens under accept_mu_, not the id's lock: rdma_destroy_id
    // stops the listener before it closes the socket (so the port is free when it returns),
    // and the application's calls on the id (rdma_accept, rdma_get_cm_event) never wait for
    // an accept.
    std::mutex accept_mu_;
    const int fd_;
    bool stopped_ = false;
    transport::HandshakeGate gate_;
};

// Out of file descriptors with no half-open connection to close: try accepting again later.
constexpr uint64_t kAcceptRetryNs = 100'000'000ull;
constexpr int kKernelBacklog = 1024;

void Listener::on_io(uint32_t) {
    auto lid = id_.lock();
    if (!lid) return;
    UniqueFd c;
    sockaddr_storage peer{};
    socklen_t plen = sizeof peer;
    {
        std::lock_guard lk(accept_mu_);
        if (stopped_) return;
        for (;;) {
            c.reset(::accept4(fd_, reinterpret_cast<sockaddr *>(&peer), &plen,
                              SOCK_NONBLOCK | SOCK_CLOEXEC));
            if (c) break;
            const bool no_fds =
                errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;
            if (!no_fds) return;  // nothing waits (the next one makes the socket readable)
            if (gate_.shed_oldest()) continue;
            SR_DEBUG("CM listener: out of file descriptors, accepting again in 100 ms");
            arm(0);  // else the waiting connection keeps the socket readable: a busy loop
            transport::ProgressEngine::get().schedule(shared_from_this(),
                                                      now_ns() + kAcceptRetryNs);
            return;
        }
    }
    // TCP_NODELAY comes from the listening socket (accepted sockets inherit it).
    on_request(lid, std::move(c), peer, plen);
}

void Listener::on_timer() {
    {
        std::lock_guard lk(accept_mu_);
        if (stopped_) return;
        arm(kEvents);
    }
    on_io(EPOLLIN);
}

void Listener::on_request(const std::shared_ptr<CmId> &lid, UniqueFd fd,
                          const sockaddr_storage &peer, socklen_t pl) {
    std::shared_ptr<CmId> child;
    sockaddr_storage local{};
    socklen_t ll = 0;
    {
        // Until the request arrives, events for the child go to the listener's channel (so
        // it gets none of its own).
        std::lock_guard lk(lid->mu);
        child = std::make_unique<CmId>(lid->chan, lid->context, lid->ps, lid->qp_type);
        child->passive = true;
        child->tos = lid->tos;
        // A listener on one address accepts on that address; only a wildcard one must ask.
        if (!is_wildcard(&lid->route.addr.src_addr)) {
            ll = sockaddr_len(&lid->route.addr.src_addr);
            std::memcpy(&local, &lid->route.addr.src_storage, ll);
        }
    }
    if (!ll) {
        ll = sizeof local;
        getsockname(fd.get(), reinterpret_cast<sockaddr *>(&local), &ll);
    }
    std::weak_ptr<CmId> wchild = child, wlid = lid;
    const uint64_t accepted_at = now_ns();
    // The closure owns the child until the request arrives (the handshake owns the closure
    // and drops it when it finishes).
    auto decide = [child, wlid, local, peer, ll, pl, accepted_at](const wire::MpaFrame &req,
                                                                  transport::MpaHandshake &hs) {
        transport::MpaHandshake::Decision d;
        const auto &c = child;
        auto l = wlid.lock();
        if (!l) return d;  // close
        // A complete request: from now on the CM's timeout applies, not the request's.
        hs.extend(accepted_at + cm_timeout_ns());
        std::lock_guard lk(l->mu);
        if (l->state != State::kListen) return d;
        if (l->pending_requests >= l->backlog) {
            // The application has `backlog` requests it has not answered: this one waits.
            d.kind = transport::MpaHandshake::Decision::Kind::kDefer;
            return d;
        }
        const FaultPlan &faults = fault_plan();
        if (faults.reject > 0 && l->dice.roll(faults.reject)) {
            // SOFTRDMA_FAULTS: rejected as if by the application, which never sees it.
            d.kind = transport::MpaHandshake::Decision::Kind::kReply;
            d.reply = mpa_frame(true, true, &req, 0, 0, nullptr, 0);
            return d;
        }
        ++l->pending_requests;
        c->parent = l;
        register_child(c);
        std::lock_guard ck(c->mu);
        std::memcpy(&c->route.addr.src_storage, &local, ll);
        std::memcpy(&c->route.addr.dst_storage, &peer, pl);
        sockaddr_to_gid(&c->route.addr.src_addr, c->route.addr.addr.ibaddr.sgid.raw);
        sockaddr_to_gid(&c->route.addr.dst_addr, c->route.addr.addr.ibaddr.dgid.raw);
        c->route.addr.addr.ibaddr.pkey = htobe16(0xffff);
        take_device(*c, context_for_addr(&c->route.addr.src_addr));
        c->peer_frame = req;
        c->handshake = hs.shared_from_this();  // before the application can see the request
        // Seen from the receiver: the peer's ORD is what we must serve, its IRD what we may use.
        c->conn.responder_resources =
            uint8_t(std::min<uint16_t>(req.ord & wire::kMpaV2IrdOrdMask, 255));
        c->conn.initiator_depth =
            uint8_t(std::min<uint16_t>(req.ird & wire::kMpaV2IrdOrdMask, 255));
        c->conn.retry_count = 7;
        c->conn.rnr_retry_count = 7;
        c->set_state(State::kConnect);
        l->post_event(RDMA_CM_EVENT_CONNECT_REQUEST, 0, req.private_data.data(),
                      req.private_data.size(), kConnectPrivateData, c);
        d.kind = transport::MpaHandshake::Decision::Kind::kHold;
        return d;
    };
    auto done = [wchild](transport::MpaHandshake::Result &&r) {
        auto c = wchild.lock();
        if (!c) return;
        std::lock_guard lk(c->mu);
        c->handshake.reset();
        if (r.err || c->state != State::kConnect) return;  // rejected or gone
        if (ibv_qp *q = c->conn_qp()) {
            auto *qp = verbs::Qp::from(q);
            if (!c->qp) qp->set_cm_managed(disconnect_hook(*c));
            // ESTABLISHED waits for the active side's RTU, as on IB: it is sent when that
            // application has seen its own ESTABLISHED (get_cm_event).
            qp->set_established_hook(established_hook(*c));
            if (qp->attach_cm_stream(std::move(r.fd), c->peer_frame) != 0)
                c->post_event(RDMA_CM_EVENT_CONNECT_ERROR, -EIO);
            return;
        }
        park(*c, r);
        c->established = true;
        c->post_event(RDMA_CM_EVENT_ESTABLISHED, 0);
    };
    gate_.admit(peer, transport::MpaHandshake::start_passive(
                          std::move(fd), decide,
                          accepted_at + transport::handshake_limits().request_timeout_ns, done));
}

void release_listener(CmId &id) {
    if (id.listener) id.listener->stop();
    if ((id.listener || id.sidr_watched) && id.sock)
        transport::ProgressEngine::get().unwatch(id.sock.get());
    id.sidr_watched = false;
    id.listener.reset();
}

// A request was answered (or dropped): room in the backlog again.
void request_done(CmId &child) {
    auto l = child.parent.lock();
    child.parent.reset();
    if (!l) return;
    std::lock_guard lk(l->mu);
    if (l->pending_requests > 0) --l->pending_requests;  // the listener accepts all along
}

void abort_connection(CmId &id) {
    if (id.handshake) {
        auto hs = std::move(id.handshake);
        hs->cancel();
    }
    id.parked_fd.reset();
    if (id.passive && !id.parent.expired()) {
        id.mu.unlock();
        request_done(id);
        id.mu.lock();
    }
}

int listen(rdma_cm_id *raw, int backlog) {
    if (!raw) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    if (id.state == State::kIdle) {
        sockaddr_in any{};
        any.sin_family = AF_INET;
        if (bind_addr(raw, reinterpret_cast<sockaddr *>(&any)) != 0) return -1;
    }
    std::lock_guard lk(id.mu);
    CM_LOG("listen %p backlog %d", static_cast<void *>(raw), backlog);
    if (id.state != State::kAddrBound) return fail(EINVAL);
    id.backlog = backlog > 0 && backlog < 1024 ? backlog : 1024;
    if (id.qp_type == IBV_QPT_UD) {
        if (sidr_listen(id) != 0) return -1;
        id.set_state(State::kListen);
        return 0;
    }
    // The kernel's queue only bridges SYN and our accept (which takes every connection at
    // once); the application's backlog is applied to complete requests.
    if (!id.sock) claim_port(id, true);  // resolution had bound it without a socket
    if (!id.sock || ::listen(id.sock.get(), kKernelBacklog) != 0) return -1;
    id.listener = std::make_shared<Listener>(id.weak_from_this(), id.sock.get());
    if (!transport::ProgressEngine::get().watch(id.sock.get(), id.listener, Listener::kEvents))
        return -1;
    id.set_state(State::kListen);
    return 0;
}

// ---------------------------------------------------------------------------- connect

// Starts (or restarts) the TCP connect + MPA request of an active id. mu held.
int dial(CmId &id) {
    if (!id.sock) {
        // The first dial of an id that address resolution left without a socket, or a
        // re-dial. A port the last connect picked may be shared with connections to other
        // peers, so binding it could fail: the next connect picks one again.
        if (id.port_by_connect) {
            release_port(id);
            set_port(&id.route.addr.src_addr, 0);
            id.port_by_connect = false;
        }
        if (open_id_socket(id, false) != 0) return -1;
    }
    if (::connect(id.sock.get(), &id.route.addr.dst_addr, sockaddr_len(&id.route.addr.dst_addr)) !=
            0 &&
        errno != EINPROGRESS)
        return -1;
    claim_port(id, false);
    auto req = mpa_frame(false, false, nullptr, id.conn.responder_resources,
                         id.conn.initiator_depth, id.connect_pd.data(), id.connect_pd.size());
    std::weak_ptr<CmId> weak = id.weak_from_this();
    auto done = [weak](transport::MpaHandshake::Result &&r) {
        auto c = weak.lock();
        if (!c) return;
        std::lock_guard lk(c->mu);
        c->handshake.reset();
        if (c->state != State::kConnect) return;
        if (r.err) {
            const auto &pd = r.peer.private_data;
            if (r.rejected) {
                c->post_event(RDMA_CM_EVENT_REJECTED, kRejConsumerDefined, pd.data(), pd.size(),
                              kRejectPrivateData);
            } else if (r.err == ECONNREFUSED && !r.got_frame) {
                // Nothing listens. A listener may be coming up this very moment (on RDMA,
                // address resolution would have taken that long): retry briefly first.
                if (within_ns(now_ns(), c->dial_started_ns, kRefusedGraceNs)) {
                    transport::ProgressEngine::get().schedule(c, now_ns() + kRedialDelayNs);
                    return;
                }
                // The IB CM's REJ "invalid service ID" (148 bytes of zeros).
                c->post_event(RDMA_CM_EVENT_REJECTED, kRejInvalidServiceId, nullptr, 0,
                              kRejectPrivateData);
            } else if (r.err == ETIMEDOUT || r.err == EHOSTUNREACH || r.err == ENETUNREACH) {
                c->post_event(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);  // nobody answered
            } else {
                c->post_event(RDMA_CM_EVENT_CONNECT_ERROR, -r.err);
            }
            qp_to_error(*c);
            return;
        }
        c->peer_frame = r.peer;
        c->conn.responder_resources =
            std::min<uint8_t>(c->conn.responder_resources, uint8_t(r.peer.ord & 0xff));
        c->conn.initiator_depth =
            std::min<uint8_t>(c->conn.initiator_depth, uint8_t(r.peer.ird & 0xff));
        const auto &pd = r.peer.private_data;
        if (!c->qp) {
            park(*c, r);
            c->post_event(RDMA_CM_EVENT_CONNECT_RESPONSE, 0, pd.data(), pd.size(),
                          kAcceptPrivateData);
            return;
        }
        int e = ready_qp(*c);
        if (!e) e = verbs::Qp::from(c->qp)->attach_cm_stream(std::move(r.fd), r.peer);
        if (e) {
            SR_DEBUG("cm: connected, but the QP could not take the connection: %s",
                     std::strerror(e));
            c->post_event(RDMA_CM_EVENT_CONNECT_ERROR, -EIO);
            qp_to_error(*c);
            return;
        }
        c->established = true;
        c->rtu_due = true;
        c->post_event(RDMA_CM_EVENT_ESTABLISHED, 0, pd.data(), pd.size(), kAcceptPrivateData);
    };
    id.handshake = transport::MpaHandshake::start_active(std::move(id.sock), std::move(req),
                                                         now_ns() + cm_timeout_ns(), done);
    return 0;
}

void check_resolution(CmId &id);

void release_held_reply(CmId &id, std::unique_lock<std::mutex> &lk);

// Timers of an id: a held accept reply, address resolution waiting for the neighbour,
// timewait, SIDR retransmissions, or a refused connect.
void CmId::on_timer() {
    std::unique_lock lk(mu);
    if (held_reply_ns && state == State::kConnect && now_ns() >= held_reply_ns)
        return release_held_reply(*this, lk);
    if (state == State::kAddrQuery) return check_resolution(*this);
    if (state == State::kDisconnect && timewait_exit_ns && now_ns() >= timewait_exit_ns) {
        timewait_exit_ns = 0;
        post_event(RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
        return;
    }
    if (state == State::kConnect && qp_type == IBV_QPT_UD) return sidr_on_timer(*this);
    if (state != State::kConnect || handshake) return;
    if (dial(*this) != 0) {
        post_event(RDMA_CM_EVENT_CONNECT_ERROR, -errno);
        qp_to_error(*this);
    }
}

// rdma_connect on a connected-mode id: records the parameters and starts the first dial.
// mu held.
int dial_first(CmId &id, const rdma_conn_param *param) {
    rdma_conn_param p{};
    p.responder_resources = RDMA_MAX_RESP_RES;  // no parameters: the device's limits
    p.initiator_depth = RDMA_MAX_INIT_DEPTH;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    if (param) p = *param;
    if (!conn_param_valid(id, param)) return fail(EINVAL);
    if (p.private_data_len > kConnectPrivateData || (p.private_data_len && !p.private_data))
        return fail(EINVAL);
    id.conn = p;
    id.conn.responder_resources = clamp_rd(p.responder_resources);
    id.conn.initiator_depth = clamp_rd(p.initiator_depth);
    const auto *pd = static_cast<const uint8_t *>(p.private_data);
    id.connect_pd.assign(pd, pd + (pd ? p.private_data_len : 0));
    id.dial_started_ns = now_ns();
    id.set_state(State::kConnect);
    if (dial(id) != 0) {
        const int e = errno;
        id.set_state(State::kRouteResolved);
        return fail(e);
    }
    return 0;
}

int connect(rdma_cm_id *raw, rdma_conn_param *param) {
    if (!raw) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    {
        std::lock_guard lk(id.mu);
        CM_LOG("connect %p", static_cast<void *>(raw));
        if (id.state != State::kRouteResolved) return fail(EINVAL);
        stats::count(stats::kCmConnectSent);
        if (id.qp_type == IBV_QPT_UD) {
            if (sidr_connect(id, param) != 0) return -1;
            id.set_state(State::kConnect);
        } else if (dial_first(id, param) != 0) {
            return -1;
        }
    }
    return id.sync ? id.complete_sync() : 0;
}

// rdma_accept / rdma_reject on a UD child: one SIDR reply. There is no ESTABLISHED on the
// passive side; the reply is the whole answer.
int answer_ud(CmId &id, const rdma_conn_param *param, const void *pd, uint8_t len, bool reject) {
    {
        std::lock_guard lk(id.mu);
        if (sidr_answer(id, param, pd, len, reject) != 0) return -1;
    }
    request_done(id);
    return 0;
}

int accept(rdma_cm_id *raw, rdma_conn_param *param) {
    if (!raw) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    CM_LOG("accept %p", static_cast<void *>(raw));
    if (id.qp_type == IBV_QPT_UD) return answer_ud(id, param, nullptr, 0, false);
    std::shared_ptr<transport::MpaHandshake> hs;
    std::vector<uint8_t> reply;
    {
        std::lock_guard lk(id.mu);
        if (!id.passive || id.state != State::kConnect || id.established || !id.handshake)
            return fail(EINVAL);
        if (param && (param->private_data_len > kAcceptPrivateData ||
                      (param->private_data_len && !param->private_data)))
            return fail(EINVAL);
        if (!conn_param_valid(id, param)) return fail(EINVAL);
        // The application's limits (0xFF or no parameters: the device's), bounded by what the
        // requester asked for.
        id.conn.responder_resources = clamp_rd(id.conn.responder_resources);
        id.conn.initiator_depth = clamp_rd(id.conn.initiator_depth);
        if (param) {
            id.conn.responder_resources =
                std::min(clamp_rd(param->responder_resources), id.conn.responder_resources);
            id.conn.initiator_depth =
                std::min(clamp_rd(param->initiator_depth), id.conn.initiator_depth);
            // IB takes the passive QP's retry count from the REQ, not from the accept:
            // keep the requester's default (7) and use only the RNR retry given here.
            id.conn.rnr_retry_count = param->rnr_retry_count;
        }
        if (id.qp && ready_qp(id) != 0) return fail(EINVAL);
        reply = mpa_frame(true, false, &id.peer_frame, id.conn.responder_resources,
                          id.conn.initiator_depth, param ? param->private_data : nullptr,
                          param ? param->private_data_len : 0);
        hs = id.handshake;
        const FaultPlan &faults = fault_plan();
        const bool lost = faults.cm_drop > 0 && id.dice.roll(faults.cm_drop);
        if (lost || faults.cm_delay_ms) {
            // SOFTRDMA_FAULTS: the reply leaves later, or never (both sides then time out).
            id.held_reply = std::move(reply);
            id.held_reply_lost = lost;
            // A lost reply's passive side gives up after the requester (which started its
            // clock earlier) has surely done so; until then the connection stays silent.
            id.held_reply_ns = now_ns() + (lost ? cm_timeout_ns() + 500'000'000ull
                                                : uint64_t(faults.cm_delay_ms) * 1000000ull);
            hs->extend(id.held_reply_ns + 1'000'000'000ull);
            transport::ProgressEngine::get().schedule(id.shared_from_this(), id.held_reply_ns);
            hs.reset();
        }
    }
    if (hs && !hs->respond(std::move(reply), true)) return fail(ECONNRESET);
    request_done(id);
    return id.sync ? id.complete_sync() : 0;
}

// The held accept reply is due: send it, or report the lost one's timeout. mu held on entry,
// released around respond() (which may complete the exchange and take mu).
void release_held_reply(CmId &id, std::unique_lock<std::mutex> &lk) {
    id.held_reply_ns = 0;
    std::vector<uint8_t> reply = std::move(id.held_reply);
    auto hs = id.handshake;
    if (id.held_reply_lost) {
        id.post_event(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
        id.handshake.reset();
        qp_to_error(id);
        lk.unlock();
        if (hs) hs->cancel();
        return;
    }
    lk.unlock();
    if (!hs || !hs->respond(std::move(reply), true)) {
        lk.lock();
        if (id.state == State::kConnect && !id.established) {
            id.post_event(RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
            qp_to_error(id);  // as rdma_cm does with the QP of a failed connection
        }
    }
}

int reject(rdma_cm_id *raw, const void *pd, uint8_t len, int reason) {
    if (!raw) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    CM_LOG("reject %p reason %d", static_cast<void *>(raw), reason);
    if (id.qp_type == IBV_QPT_UD) return answer_ud(id, nullptr, pd, len, true);
    std::shared_ptr<transport::MpaHandshake> hs;
    std::vector<uint8_t> reply;
    {
        std::lock_guard lk(id.mu);
        if (!id.passive || id.state != State::kConnect || id.established || !id.handshake)
            return fail(EINVAL);
        if (len > kRejectPrivateData || (len && !pd)) return fail(EINVAL);
        stats::count(stats::kCmRejectSent);
        reply = mpa_frame(true, true, &id.peer_frame, 0, 0, pd, len);
        hs = std::move(id.handshake);
    }
    hs->respond(std::move(reply), false);
    request_done(id);
    return 0;
}

int disconnect(rdma_cm_id *raw) {
    if (!raw) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    {
        std::lock_guard lk(id.mu);
        CM_LOG("disconnect %p", static_cast<void *>(raw));
        // After the peer's DREQ the kernel answers with a DREP and returns 0; DISCONNECTED has
        // already been reported.
        if (id.state == State::kDisconnect) return 0;
        if (id.state != State::kConnect) return fail(EINVAL);
        // RoCE: the QP goes to ERR first (flushing), then the connection ends.
        id.set_state(State::kDisconnect);
        qp_to_error(id);
        if (id.handshake) {
            auto hs = std::move(id.handshake);
            hs->cancel();
        }
        id.parked_fd.reset();
        id.post_event(RDMA_CM_EVENT_DISCONNECTED, 0);
        if (id.established) enter_timewait(id);
    }
    return id.sync ? id.complete_sync() : 0;
}

// Completes an active connection for a QP the application drives itself (after
// CONNECT_RESPONSE). Synchronous: rdma-core generates no event for it, and refuses ids whose
// QP the CM made.
int establish(rdma_cm_id *raw) {
    if (!raw) return fail(EINVAL);
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    CM_LOG("establish %p", static_cast<void *>(raw));
    if (id.qp || id.state != State::kConnect || !id.parked_fd || id.passive) return fail(EINVAL);
    ibv_qp *q = id.conn_qp();
    if (!q) return fail(EINVAL);
    auto *qp = verbs::Qp::from(q);
    qp->set_cm_managed(disconnect_hook(id));
    if (qp->attach_cm_stream(std::move(id.parked_fd), id.peer_frame) != 0) return fail(EINVAL);
    id.established = true;
    qp->send_rtu();
    return 0;
}

int notify(rdma_cm_id *raw, ibv_event_type ev) {
    if (!raw) return fail(EINVAL);
    CM_LOG("notify %p event %d", static_cast<void *>(raw), int(ev));
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    return id.state == State::kConnect ? 0 : fail(EINVAL);
}

int get_request(rdma_cm_id *listen_raw, rdma_cm_id **out) {
    if (!listen_raw || !out) return fail(EINVAL);
    CM_LOG("get_request %p", static_cast<void *>(listen_raw));
    CmId &l = *CmId::from(listen_raw);
    if (!l.sync || l.state != State::kListen) return fail(EINVAL);
    if (l.complete_sync() != 0) return -1;
    rdma_cm_event *ev = l.event;
    if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) return fail(EINVAL);
    rdma_cm_id *nid = ev->id;
    if (migrate_id(nid, nullptr) != 0) return -1;
    if (l.has_ep_qp_attr) {
        ibv_qp_init_attr a = l.ep_qp_attr;
        if (create_qp(nid, l.pd, &a) != 0) return -1;
    }
    // The request travels with the new id, as rdma-core hands it over.
    nid->event = ev;
    l.event = nullptr;
    *out = nid;
    return 0;
}

int set_local_ece(rdma_cm_id *raw, ibv_ece *ece) {
    if (!raw || !ece) return fail(EINVAL);
    CM_LOG("set_local_ece %p", static_cast<void *>(raw));
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    id.local_ece = *ece;
    return 0;
}

int get_remote_ece(rdma_cm_id *raw, ibv_ece *ece) {
    if (!raw || !ece) return fail(EINVAL);
    CM_LOG("get_remote_ece %p", static_cast<void *>(raw));
    CmId &id = *CmId::from(raw);
    std::lock_guard lk(id.mu);
    *ece = id.remote_ece;
    return 0;
}

// The QP hook: runs on the engine thread when the QP's connection ends.
std::function<void()> disconnect_hook(CmId &id) {
    std::weak_ptr<CmId> weak = id.weak_from_this();
    return [weak] { on_transport_closed(weak); };
}

std::function<void()> established_hook(CmId &id) {
    std::weak_ptr<CmId> weak = id.weak_from_this();
    return [weak] {
        auto c = weak.lock();
        if (!c) return;
        std::lock_guard lk(c->mu);
        if (c->state != State::kConnect || c->established) return;
        c->established = true;
        c->post_event(RDMA_CM_EVENT_ESTABLISHED, 0);
    };
}

}  // namespace softrdma::cm
