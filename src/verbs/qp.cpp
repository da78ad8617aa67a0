// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/qp.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <thread>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "common/clock.h"
#include "common/enum_value.h"
#include "common/log.h"
#include "verbs/cm_token.h"
#include "verbs/context.h"
#include "verbs/cq.h"
#include "verbs/mw.h"
#include "verbs/pd.h"
#include "verbs/qp_state_table.h"
#include "verbs/region_file.h"
#include "verbs/retry_policy.h"
#include "verbs/srq.h"
#include "verbs/xrcd.h"

namespace softrdma::verbs {

uint32_t sq_slot(const Qp &qp, uint32_t i) {
    // The head is a slot and i at most the queue's size: one subtraction, not a division, on
    // every post and completion.
    const uint32_t n = uint32_t(qp.sq_.size()), s = qp.sq_head_ + i;
    return s < n ? s : s - n < n ? s - n : s % n;
}

namespace {

ibv_wc_opcode wc_opcode_for(ibv_wr_opcode op) {
    switch (op) {
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            return IBV_WC_RDMA_WRITE;
        case IBV_WR_RDMA_READ:
            return IBV_WC_RDMA_READ;
        case IBV_WR_ATOMIC_CMP_AND_SWP:
            return IBV_WC_COMP_SWAP;
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            return IBV_WC_FETCH_ADD;
        case IBV_WR_BIND_MW:
            return IBV_WC_BIND_MW;
        case IBV_WR_LOCAL_INV:
            return IBV_WC_LOCAL_INV;
        case IBV_WR_ATOMIC_WRITE:
            return IBV_WC_ATOMIC_WRITE;
        default:
            return IBV_WC_SEND;
    }
}

bool is_atomic(ibv_wr_opcode op) {
    return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// How long the engine keeps reading a shared-memory ring nobody polls after frames last came
// through it: as long as it polls after socket activity (SOFTRDMA_ENGINE_SPIN_US).
uint64_t ring_spin_ns() {
    static const uint64_t ns = transport::engine_spin_ns();
    return ns;
}

// SOFTRDMA_TX_BATCH=0 turns doorbell batching (Qp::defer_send) off.
bool tx_batching() {
    static const bool on = [] {
        const char *v = std::getenv("SOFTRDMA_TX_BATCH");
        return !(v && std::strcmp(v, "0") == 0);
    }();
    return on;
}

}  // namespace

Qp::Qp(Context *ctx, const ibv_qp_init_attr_ex &a)
    : ibv_qp_ex{},
      ctx_(ctx),
      pd_(Pd::from(a.pd)),
      scq_(Cq::from(a.send_cq)),
      rcq_(Cq::from(a.recv_cq)),
      srq_(a.srq ? Srq::from(a.srq) : nullptr),
      sq_sig_all_(a.sq_sig_all != 0),
      max_inline_(a.cap.max_inline_data),
      max_send_sge_(a.cap.max_send_sge),
      max_recv_sge_(a.cap.max_recv_sge),
      sq_mem_(domain_memory(a.pd, kResTypeQp)),
      rq_mem_(a.srq ? nullptr : domain_memory(a.pd, kResTypeRq)),
      sq_(resource_of(sq_mem_)),
      sq_sges_(resource_of(sq_mem_)),
      sq_inline_(resource_of(sq_mem_)),
      rq_(resource_of(rq_mem_)) {
    qp_base.context = ctx->ibv();
    qp_base.qp_context = a.qp_context;
    qp_base.pd = a.pd;
    qp_base.send_cq = a.send_cq;
    qp_base.recv_cq = a.recv_cq;
    qp_base.srq = a.srq;
    qp_base.qp_type = a.qp_type;
    qp_base.state = IBV_QPS_RESET;
    pthread_mutex_init(&qp_base.mutex, nullptr);
    pthread_cond_init(&qp_base.cond, nullptr);
    comp_mask = a.comp_mask;

    sq_.resize(a.cap.max_send_wr);
    sq_sges_.resize(size_t(a.cap.max_send_wr) * max_send_sge_);
    sq_inline_.resize(size_t(a.cap.max_send_wr) * max_inline_);
    if (!srq_) rq_.init(a.cap.max_recv_wr, max_recv_sge_);
    cur_recv_sges_.resize(kMaxSge);
    ctrl_.reserve(8);
    attr_.qp_state = IBV_QPS_RESET;
    attr_.path_mtu = IBV_MTU_1024;
    attr_.port_num = 1;
}

Qp::~Qp() {
    stats::release(stats_);
    pthread_cond_destroy(&qp_base.cond);
    pthread_mutex_destroy(&qp_base.mutex);
}

void install_wr_api(Qp &qp, uint64_t send_ops_flags);

std::shared_ptr<Qp> Qp::create(Context *ctx, ibv_qp_init_attr_ex &a, int &err) {
    err = 0;
    const long long type = enum_value(a.qp_type);
    if (type != IBV_QPT_RC && type != IBV_QPT_UC && type != IBV_QPT_UD &&
        type != IBV_QPT_XRC_SEND && type != IBV_QPT_XRC_RECV && type != IBV_QPT_RAW_PACKET) {
        err = refuse(EOPNOTSUPP, "ibv_create_qp",
                     "qp_type %lld: RC, UC, UD, XRC_SEND, XRC_RECV and RAW_PACKET QPs exist", type);
        return nullptr;
    }
    const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                           IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                           IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE |
                           IBV_QP_INIT_ATTR_RX_HASH;
    if (a.comp_mask & ~known) {
        err = refuse(EOPNOTSUPP, "ibv_create_qp_ex", "comp_mask bits 0x%x are not supported",
                     a.comp_mask & ~known);
        return nullptr;
    }
    const bool rss = a.comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH);
    if (rss && type != IBV_QPT_RAW_PACKET) {
        err = refuse(EINVAL, "ibv_create_qp_ex", "only raw packet QPs spread receives (RSS)");
        return nullptr;
    }
    if (rss) {
        // Receives only, into the table's WQs: no send queue, receive queue or CQs of its own.
        if ((err = raw_check_rss(a)) != 0) return nullptr;
        if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd) {
            err = refuse(EINVAL, "ibv_create_qp_ex", "an RSS QP needs a PD");
            return nullptr;
        }
        a.send_cq = a.recv_cq = nullptr;
        a.srq = nullptr;
        a.cap = {};
    } else if (type == IBV_QPT_XRC_RECV) {
        // Only a domain: its PD, receives and CQ are those of the SRQ each request names.
        if (!(a.comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a.xrcd) {
            err = refuse(EINVAL, "ibv_create_qp", "an XRC_RECV QP needs its XRC domain");
            return nullptr;
        }
        a.pd = nullptr;
        a.send_cq = a.recv_cq = nullptr;
        a.srq = nullptr;
        a.cap = {};
    } else if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd || !a.send_cq ||
               (!a.recv_cq && type != IBV_QPT_XRC_SEND)) {
        err = refuse(EINVAL, "ibv_create_qp", "a QP needs a PD, a send CQ and a receive CQ");
        return nullptr;
    }
    if (type == IBV_QPT_XRC_SEND) {  // sends only
        a.srq = nullptr;
        a.cap.max_recv_wr = a.cap.max_recv_sge = 0;
    }
    const uint32_t create_flags =
        (a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) ? a.create_flags : 0u;
    if (create_flags & ~uint32_t(IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)) {
        err = refuse(EOPNOTSUPP, "ibv_create_qp_ex",
                     "create_flags 0x%x: only IBV_QP_CREATE_BLOCK_SELF_MCAST_LB is supported",
                     create_flags);
        return nullptr;
    }
    ibv_qp_cap &c = a.cap;
    if (c.max_send_wr > uint32_t(kMaxQpWr) || c.max_send_sge > uint32_t(kMaxSge) ||
        c.max_inline_data > uint32_t(kMaxInline) ||
        (!a.srq && (c.max_recv_wr > uint32_t(kMaxQpWr) || c.max_recv_sge > uint32_t(kMaxSge)))) {
        err = refuse(EINVAL, "ibv_create_qp",
                     "cap max_send_wr %u, max_recv_wr %u, max_send_sge %u, max_recv_sge %u, "
                     "max_inline_data %u: the device allows at most %d work requests, %d SGEs "
                     "and %d inline bytes",
                     c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge,
                     c.max_inline_data, kMaxQpWr, kMaxSge, kMaxInline);
        return nullptr;
    }
    // Granted capabilities, written back as the kernel does.
    c.max_send_wr = std::max(c.max_send_wr, 1u);
    c.max_send_sge = std::max(c.max_send_sge, 1u);
    c.max_inline_data = std::max(c.max_inline_data, 64u);
    if (type == IBV_QPT_XRC_RECV || type == IBV_QPT_XRC_SEND) {
        c.max_recv_wr = c.max_recv_sge = 0;
    } else if (a.srq || rss) {
        c.max_recv_wr = 0;
        c.max_recv_sge = 0;
    } else {
        c.max_recv_wr = std::max(c.max_recv_wr, 1u);
        c.max_recv_sge = std::max(c.max_recv_sge, 1u);
    }
    // Not make_shared: a Qp is 8 KiB, and a weak reference (an engine timer due later, a
    // handshake's callback) would keep all of it allocated after the QP is destroyed.
    std::shared_ptr<Qp> qp;
    try {
        qp = std::make_unique<Qp>(ctx, a);
    } catch (const std::bad_alloc &) {
        err = refuse(ENOMEM, "ibv_create_qp",
                     "no memory for the queues (the parent domain's "
                     "allocator, or the heap)");
        return nullptr;
    }
    qp->block_self_mcast_ = create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
    if (type == IBV_QPT_UD || type == IBV_QPT_RAW_PACKET) {
        if ((err = type == IBV_QPT_UD ? qp->ud_open() : qp->raw_open(a)) != 0) return nullptr;
        if (!qp->ud_watch()) {
            err = errno ? errno : ENOMEM;
            return nullptr;
        }
    }
    if (type != IBV_QPT_UD) {
        const uint32_t qpn = transport::register_qp(qp);
        if (!qpn) {
            err = errno ? errno : ENOMEM;
            return nullptr;
        }
        qp->qp_base.qp_num = qpn;
    }
    if (a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) install_wr_api(*qp, a.send_ops_flags);
    if (type == IBV_QPT_XRC_RECV) {
        qp->xrcd_ = Xrcd::from(a.xrcd);
        qp->xrcd_->users.fetch_add(1);
        return qp;
    }
    pd_hold(a.pd);
    if (rss) qp->raw_attach(a.rwq_ind_tbl);
    for (Cq *cq : {qp->scq_, qp->rcq_}) {
        if (!cq) continue;
        cq->add_user();
        cq->attach(qp.get());
    }
    if (qp->srq_) qp->srq_->add_user();
    qp->publish_stats(a);
    return qp;
}

void Qp::publish_stats(const ibv_qp_init_attr_ex &a) {
    stats::QpSlot &s = *stats_;
    s.qpn.store(qp_base.qp_num, std::memory_order_relaxed);
    s.type.store(uint8_t(qp_base.qp_type), std::memory_order_relaxed);
    s.state.store(uint8_t(qp_base.state), std::memory_order_relaxed);
    s.sq_depth.store(a.cap.max_send_wr, std::memory_order_relaxed);
    s.rq_depth.store(srq_ ? 0 : a.cap.max_recv_wr, std::memory_order_relaxed);
    s.max_sge.store(a.cap.max_send_sge, std::memory_order_relaxed);
    s.max_inline.store(a.cap.max_inline_data, std::memory_order_relaxed);
    s.live.store(1, std::memory_order_release);
}

void Qp::shutdown() {
    dead_.store(true);
    std::shared_ptr<transport::MpaHandshake> hs;
    {
        Lock lk(mu_);
        flush_ack(lk);
        destroyed_ = true;
        publish_responder();  // a peer's direct WRITE/READ stops now
        if (stream_) {
            transport::ProgressEngine::get().unwatch(stream_->fd());
            stream_.reset();
        }
        hs = std::move(handshake_);
        if (ud_fd_) transport::ProgressEngine::get().unwatch(ud_fd_.get());
        const stats::QpSlot &d = *stats_;
        auto n = [&d](stats::QpCounter k) { return (unsigned long long)d.get(k); };
        if (qp_base.qp_type == IBV_QPT_RAW_PACKET) {
            SR_DEBUG(
                "qp %u: raw frames dropped: no receive %llu, not ready %llu, by a DROP rule "
                "%llu, send failed %llu",
                qp_base.qp_num, n(stats::kUdDropNoRecv), n(stats::kUdDropNotReady),
                n(stats::kRawDropRule), n(stats::kUdDropSendFailed));
        } else if (ud_fd_) {
            if (mc_fd_) transport::ProgressEngine::get().unwatch(mc_fd_.get());
            SR_DEBUG(
                "qp %u: UD datagrams dropped: no receive %llu, Q_Key %llu, malformed %llu, "
                "not ready %llu, send failed %llu, own multicast %llu, socket full %llu",
                qp_base.qp_num, n(stats::kUdDropNoRecv), n(stats::kUdDropQkey),
                n(stats::kUdDropMalformed), n(stats::kUdDropNotReady), n(stats::kUdDropSendFailed),
                n(stats::kUdDropOwnMcast), n(stats::kUdDropSocketFull));
        }
    }
    if (hs) hs->cancel();
    if (qp_base.qp_type != IBV_QPT_UD) transport::unregister_qp(qp_base.qp_num);  // raw too
    while (callbacks_.load()) std::this_thread::yield();  // engine callbacks drain
    if (xrcd_) {
        xrc_release();
        xrcd_->users.fetch_sub(1);
        return;
    }
    for (Cq *cq : {scq_, rcq_}) {
        if (!cq) continue;
        cq->detach(this);
        cq->drop_user();
    }
    if (srq_) srq_->drop_user();
    raw_close();
    // The rings go back to a parent domain's allocator now, not when the last reference drops
    // (an engine callback may still hold one for a moment): the application may tear its
    // allocator down as soon as ibv_destroy_qp returns. Nothing reaches them any more: the
    // callbacks drained, and no CQ polls this QP. They are taken under the lock and freed
    // outside it, as every call into an application's allocator is.
    {
        auto rings = [&] {
            Lock lk(mu_);
            sq_head_ = sq_count_ = sq_tx_ = 0;
            return std::tuple(std::move(sq_), std::move(sq_sges_), std::move(sq_inline_),
                              std::move(rq_));
        }();
    }
    pd_release(qp_base.pd);
}

// ---------------------------------------------------------------------------------- modify

int Qp::modify(ibv_qp_attr *a, int mask) {
    Lock lk(mu_);
    static constexpr const char *kVerb = "ibv_modify_qp";
    if (destroyed_) return refuse(EINVAL, kVerb, "the QP is being destroyed");
    const ibv_qp_state actual = qp_base.state;
    auto state_arg = [](const ibv_qp_state &s) {
        const long long v = enum_value(s);
        return v >= IBV_QPS_RESET && v <= IBV_QPS_ERR ? ibv_qp_state(v) : IBV_QPS_UNKNOWN;
    };
    const ibv_qp_state cur = (mask & IBV_QP_CUR_STATE) ? state_arg(a->cur_qp_state) : actual;
    const ibv_qp_state next = (mask & IBV_QP_STATE) ? state_arg(a->qp_state) : cur;
    if (!qp_transition_ok(cur, next, qp_base.qp_type, mask))
        return refuse(EINVAL, kVerb,
                      "%s QP %s -> %s with attr_mask 0x%x: not a valid transition, or the mask "
                      "lacks an attribute this transition requires or has one it forbids",
                      qp_type_name(qp_base.qp_type), qp_state_name(cur), qp_state_name(next),
                      unsigned(mask));
    if ((mask & IBV_QP_PORT) && a->port_num != 1)
        return refuse(EINVAL, kVerb, "port_num %u: the device has one port, 1", a->port_num);
    if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
        return refuse(EINVAL, kVerb, "pkey_index %u: the P_Key table has one entry, 0",
                      a->pkey_index);
    if ((mask & IBV_QP_PATH_MTU) &&
        (enum_value(a->path_mtu) < IBV_MTU_256 || enum_value(a->path_mtu) > IBV_MTU_4096))
        return refuse(EINVAL, kVerb, "path_mtu %lld is not an enum ibv_mtu value (1-5)",
                      enum_value(a->path_mtu));
    if ((mask & IBV_QP_PATH_MIG_STATE) && enum_value(a->path_mig_state) > IBV_MIG_ARMED)
        return refuse(EINVAL, kVerb, "path_mig_state %lld is not an enum ibv_mig_state value",
                      enum_value(a->path_mig_state));
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > kMaxRdAtomic)
        return refuse(EINVAL, kVerb, "max_rd_atomic %u exceeds the device's max_qp_init_rd_atom %d",
                      a->max_rd_atomic, kMaxRdAtomic);
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > kMaxRdAtomic)
        return refuse(EINVAL, kVerb, "max_dest_rd_atomic %u exceeds the device's max_qp_rd_atom %d",
                      a->max_dest_rd_atomic, kMaxRdAtomic);
    if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
        return refuse(EINVAL, kVerb, "timeout %u: at most 31", a->timeout);
    if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
        return refuse(EINVAL, kVerb, "retry_cnt %u: at most 7", a->retry_cnt);
    if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
        return refuse(EINVAL, kVerb, "rnr_retry %u: at most 7 (7 = retry forever)", a->rnr_retry);
    if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
        return refuse(EINVAL, kVerb, "min_rnr_timer %u: at most 31", a->min_rnr_timer);
    const unsigned known_access = IBV_ACCESS_LOCAL_WRITE | kRemoteAccessMask | IBV_ACCESS_MW_BIND |
                                  IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |
                                  IBV_ACCESS_RELAXED_ORDERING;
    if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~known_access))
        return refuse(EINVAL, kVerb, "qp_access_flags 0x%x: unknown bits 0x%x", a->qp_access_flags,
                      a->qp_access_flags & ~known_access);
    if (mask & IBV_QP_AV) {
        // RoCE: the address vector must carry a GRH naming one of our GIDs.
        const ibv_ah_attr &av = a->ah_attr;
        if (!av.is_global)
            return refuse(EINVAL, kVerb,
                          "ah_attr.is_global is 0: RoCE addresses peers by GID, so the address "
                          "vector needs a GRH (is_global = 1, grh.dgid, grh.sgid_index)");
        const size_t gids = ctx_->dev()->gids().size();
        if (av.grh.sgid_index >= gids)
            return refuse(EINVAL, kVerb, "ah_attr.grh.sgid_index %u: %s has %zu GIDs",
                          av.grh.sgid_index, ctx_->dev()->name, gids);
        sockaddr_storage ss;
        socklen_t len;
        if (!gid_to_sockaddr(av.grh.dgid.raw, 0, ss, len))
            return refuse(EINVAL, kVerb,
                          "ah_attr.grh.dgid is zero: the destination GID must be the peer's");
    }
    if ((mask & IBV_QP_DEST_QPN) && (a->dest_qp_num == 0 || a->dest_qp_num > 0xffffff))
        return refuse(EINVAL, kVerb, "dest_qp_num 0x%x: a QP number is 24 bits and not 0",
                      a->dest_qp_num);

    // Apply.
    if (mask & IBV_QP_ACCESS_FLAGS) access_ = int(a->qp_access_flags);
    if (mask & IBV_QP_PKEY_INDEX) attr_.pkey_index = a->pkey_index;
    if (mask & IBV_QP_PORT) attr_.port_num = a->port_num;
    if (mask & IBV_QP_QKEY) attr_.qkey = a->qkey;
    if (mask & IBV_QP_AV) {
        attr_.ah_attr = a->ah_attr;
        std::memcpy(remote_gid_, a->ah_attr.grh.dgid.raw, 16);
    }
    if (mask & IBV_QP_PATH_MTU) attr_.path_mtu = a->path_mtu;
    if (mask & IBV_QP_TIMEOUT) attr_.timeout = a->timeout;
    if (mask & IBV_QP_RETRY_CNT) attr_.retry_cnt = a->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY) attr_.rnr_retry = a->rnr_retry;
    if (mask & IBV_QP_RQ_PSN) attr_.rq_psn = a->rq_psn;
    if (mask & IBV_QP_SQ_PSN) attr_.sq_psn = a->sq_psn;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) attr_.max_rd_atomic = a->max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) attr_.max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER) attr_.min_rnr_timer = a->min_rnr_timer;
    if (mask & IBV_QP_DEST_QPN) {
        attr_.dest_qp_num = a->dest_qp_num;
        remote_qpn_ = a->dest_qp_num;
        if (is_cm_token(a->dest_qp_num)) {
            // A QP the application drives with rdma_init_qp_attr: the CM connects it.
            cm_managed_ = true;
            cm_token_bind(a->dest_qp_num, shared_from_this());
        }
    }
    if (mask & IBV_QP_ALT_PATH) {
        attr_.alt_ah_attr = a->alt_ah_attr;
        attr_.alt_pkey_index = a->alt_pkey_index;
        attr_.alt_port_num = a->alt_port_num;
        attr_.alt_timeout = a->alt_timeout;
    }
    if (mask & IBV_QP_PATH_MIG_STATE) attr_.path_mig_state = a->path_mig_state;
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) attr_.en_sqd_async_notify = a->en_sqd_async_notify;

    if (!(mask & IBV_QP_STATE) || next == actual) {
        publish_responder();
        if (next == IBV_QPS_RTS) progress(lk);
        return 0;
    }
    qp_base.state = next;
    attr_.qp_state = next;
    stats_->state.store(uint8_t(next), std::memory_order_relaxed);
    publish_responder();
    switch (next) {
        case IBV_QPS_RESET: {
            if (stream_) {
                transport::ProgressEngine::get().unwatch(stream_->fd());
                stream_.reset();
            }
            auto hs = std::move(handshake_);
            connecting_ = false;
            sq_head_ = sq_count_ = sq_tx_ = 0;
            tx_off_ = 0;
            if (!srq_) rq_.clear();
            next_seq_ = send_msn_ = read_msn_ = atomic_msn_ = 1;
            acked_seq_ = executed_seq_ = acked_sent_ = 0;
            rd_outstanding_ = resp_head_ = resp_count_ = 0;
            rnr_wait_ = rnr_dropping_ = recv_active_ = fatal_pending_ = term_pending_ = false;
            send_resync_ = tx_imm_stage_ = false;
            ctrl_.clear();
            access_ = 0;
            // Completions of the QP's past life leave its CQs, as rdma-core's providers clean
            // them on RESET: a program that resets a failed QP then polls only its new ones.
            if (scq_) scq_->purge(qp_base.qp_num);
            if (rcq_ && rcq_ != scq_) rcq_->purge(qp_base.qp_num);
            tx_srqn_ = kNoSrqn;
            if (xrcd_) xrc_release();
            if (hs) {
                lk.unlock();
                hs->cancel();
                lk.lock();
            }
            break;
        }
        case IBV_QPS_ERR:
            move_to_error(lk);
            break;
        case IBV_QPS_RTR:
            dial_backoff_ns_ = 0;
            if (i_dial()) start_connect(lk);
            break;
        case IBV_QPS_RTS:
            last_progress_ns_ = now_ns();
            progress(lk);
            break;
        case IBV_QPS_SQD:
            if (sq_tx_ == sq_count_ && attr_.en_sqd_async_notify)
                report_async(IBV_EVENT_SQ_DRAINED);
            break;
        default:
            break;
    }
    return 0;
}

int Qp::query(ibv_qp_attr *a, int, ibv_qp_init_attr *init) {
    Lock lk(mu_);
    *a = attr_;
    a->qp_state = qp_base.state;
    a->cur_qp_state = qp_base.state;
    a->qp_access_flags = unsigned(access_);
    a->cap.max_send_wr = uint32_t(sq_.size());
    a->cap.max_recv_wr = srq_ ? 0 : rq_.depth();
    a->cap.max_send_sge = max_send_sge_;
    a->cap.max_recv_sge = srq_ ? 0 : max_recv_sge_;
    a->cap.max_inline_data = max_inline_;
    a->sq_draining = qp_base.state == IBV_QPS_SQD && sq_tx_ < sq_count_;
    if (init) {
        *init = {};
        init->qp_context = qp_base.qp_context;
        init->send_cq = qp_base.send_cq;
        init->recv_cq = qp_base.recv_cq;
        init->srq = qp_base.srq;
        init->cap = a->cap;
        init->qp_type = qp_base.qp_type;
        init->sq_sig_all = sq_sig_all_;
    }
    return 0;
}

// ------------------------------------------------------------------------------- posting

int Qp::validate_send(const ibv_send_wr &wr) const {
    static constexpr const char *kVerb = "ibv_post_send";
    if (wr.num_sge < 0 || uint32_t(wr.num_sge) > max_send_sge_)
        return refuse(EINVAL, kVerb, "wr_id %llu: num_sge %d, the QP was created for %u",
                      (unsigned long long)wr.wr_id, wr.num_sge, max_send_sge_);
    if (wr.num_sge > 0 && !wr.sg_list)
        return refuse(EINVAL, kVerb, "wr_id %llu: num_sge %d with a NULL sg_list",
                      (unsigned long long)wr.wr_id, wr.num_sge);
    if (qp_base.qp_type == IBV_QPT_XRC_RECV)
        return refuse(EINVAL, kVerb, "an XRC_RECV QP has no send queue");
    const long long op = enum_value(wr.opcode);
    if (op < IBV_WR_RDMA_WRITE || op > IBV_WR_ATOMIC_WRITE)
        return refuse(EINVAL, kVerb, "wr_id %llu: opcode %lld is not an enum ibv_wr_opcode",
                      (unsigned long long)wr.wr_id, op);
    switch (wr.opcode) {
        case IBV_WR_SEND:
        case IBV_WR_SEND_WITH_IMM:
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            break;
        case IBV_WR_BIND_MW:
        case IBV_WR_LOCAL_INV:
            if (!reliable() && qp_base.qp_type != IBV_QPT_UC)
                return refuse(EINVAL, kVerb, "wr_id %llu: %s exists on RC, XRC and UC QPs, not %s",
                              (unsigned long long)wr.wr_id, wr_opcode_name(wr.opcode),
                              qp_type_name(qp_base.qp_type));
            if (wr.opcode == IBV_WR_BIND_MW && !wr.bind_mw.mw)
                return refuse(EINVAL, kVerb, "wr_id %llu: IBV_WR_BIND_MW without a window",
                              (unsigned long long)wr.wr_id);
            if (wr.opcode == IBV_WR_BIND_MW && !wr.bind_mw.bind_info.mr &&
                (wr.bind_mw.bind_info.addr || wr.bind_mw.bind_info.length))
                return refuse(EINVAL, kVerb, "wr_id %llu: a window with memory needs its region",
                              (unsigned long long)wr.wr_id);
            return 0;  // no scatter list: num_sge and inline flags are ignored
        case IBV_WR_ATOMIC_WRITE: {
            if (!reliable())
                return refuse(EINVAL, kVerb, "wr_id %llu: %s exists on RC and XRC QPs only, not %s",
                              (unsigned long long)wr.wr_id, wr_opcode_name(wr.opcode),
                              qp_type_name(qp_base.qp_type));
            // Its 8 bytes travel in the work request when inline, whatever max_inline_data.
            uint64_t n = 0;
            for (int i = 0; i < wr.num_sge; ++i) n += wr.sg_list[i].length;
            if (n != 8 || (!(wr.send_flags & IBV_SEND_INLINE) && wr.num_sge != 1))
                return refuse(EINVAL, kVerb, "wr_id %llu: an ATOMIC WRITE carries 8 bytes",
                              (unsigned long long)wr.wr_id);
            return 0;
        }
        case IBV_WR_SEND_WITH_INV:
        case IBV_WR_RDMA_READ:
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            if (!reliable())
                return refuse(EINVAL, kVerb, "wr_id %llu: %s exists on RC and XRC QPs only, not %s",
                              (unsigned long long)wr.wr_id, wr_opcode_name(wr.opcode),
                              qp_type_name(qp_base.qp_type));
            break;
        default:
            return refuse(EINVAL, kVerb, "wr_id %llu: %s is not supported on this QP",
                          (unsigned long long)wr.wr_id, wr_opcode_name(wr.opcode));
    }
    uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
    if ((wr.send_flags & IBV_SEND_INLINE) && total > max_inline_)
        return refuse(EINVAL, kVerb, "wr_id %llu: %llu inline bytes, the QP allows %u",
                      (unsigned long long)wr.wr_id, (unsigned long long)total, max_inline_);
    if (is_atomic(wr.opcode) && (wr.num_sge != 1 || wr.sg_list[0].length != 8))
        return refuse(EINVAL, kVerb, "wr_id %llu: an atomic needs one SGE of 8 bytes",
                      (unsigned long long)wr.wr_id);
    if ((is_atomic(wr.opcode) || wr.opcode == IBV_WR_RDMA_READ) &&
        (wr.send_flags & IBV_SEND_INLINE))
        return refuse(EINVAL, kVerb,
                      "wr_id %llu: %s cannot be IBV_SEND_INLINE (it writes "
                      "local memory)",
                      (unsigned long long)wr.wr_id, wr_opcode_name(wr.opcode));
    if (total > (1ull << 31))
        return refuse(EINVAL, kVerb, "wr_id %llu: %llu bytes, a message is at most 2 GiB",
                      (unsigned long long)wr.wr_id, (unsigned long long)total);
    return 0;
}

int Qp::post_one_send(const ibv_send_wr &wr, Lock &) {
    if (int e = validate_send(wr)) return e;
    if (sq_count_ == sq_.size())
        return refuse(ENOMEM, "ibv_post_send", "the send queue is full (%zu work requests)",
                      sq_.size());
    const uint32_t slot = sq_slot(*this, sq_count_);
    uint64_t before = 0;
    if (sq_count_) {
        const SendWqe &prev = sq_[sq_slot(*this, sq_count_ - 1)];
        before = prev.bytes_before + prev.total_len;
    }
    SendWqe &w = sq_[slot];
    w = SendWqe{};
    w.bytes_before = before;
    w.wr_id = wr.wr_id;
    w.opcode = wr.opcode;
    w.flags = wr.send_flags;
    const bool local_op = wr.opcode == IBV_WR_BIND_MW || wr.opcode == IBV_WR_LOCAL_INV;
    w.num_sge = local_op ? 0 : uint32_t(wr.num_sge);
    if (qp_base.qp_type == IBV_QPT_XRC_SEND) w.xrc_srqn = wr.qp_type.xrc.remote_srqn;
    w.rnr_left = attr_.rnr_retry;
    Sge *sg = &sq_sges_[size_t(slot) * max_send_sge_];
    for (uint32_t i = 0; i < w.num_sge; ++i) {
        sg[i] = {wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
        w.total_len += wr.sg_list[i].length;
    }
    if (wr.opcode == IBV_WR_ATOMIC_WRITE && (wr.send_flags & IBV_SEND_INLINE)) {
        uint8_t *dst = reinterpret_cast<uint8_t *>(&w.compare_add);
        for (int i = 0; i < wr.num_sge; ++i) {
            std::memcpy(dst, reinterpret_cast<const void *>(uintptr_t(wr.sg_list[i].addr)),
                        wr.sg_list[i].length);
            dst += wr.sg_list[i].length;
        }
        w.is_inline = true;
    } else if ((wr.send_flags & IBV_SEND_INLINE) && !local_op) {
        // The data is captured now; the buffers may be reused as soon as we return.
        uint8_t *dst = &sq_inline_[size_t(slot) * max_inline_];
        for (int i = 0; i < wr.num_sge; ++i) {
            std::memcpy(dst, reinterpret_cast<const void *>(uintptr_t(wr.sg_list[i].addr)),
                        wr.sg_list[i].length);
            dst += wr.sg_list[i].length;
        }
        w.is_inline = true;
    }
    switch (wr.opcode) {
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
        case IBV_WR_RDMA_READ:
        case IBV_WR_ATOMIC_WRITE:
            w.remote_addr = wr.wr.rdma.remote_addr;
            w.rkey = wr.wr.rdma.rkey;
            break;
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            w.remote_addr = wr.wr.atomic.remote_addr;
            w.rkey = wr.wr.atomic.rkey;
            w.compare_add = wr.wr.atomic.compare_add;
            w.swap = wr.wr.atomic.swap;
            break;
        case IBV_WR_BIND_MW: {
            const ibv_mw_bind_info &bi = wr.bind_mw.bind_info;
            w.bind_mw = Mw::from(wr.bind_mw.mw);
            w.rkey = wr.bind_mw.rkey;
            w.remote_addr = bi.addr;
            w.bind_len = bi.length;
            w.bind_mr_lkey = bi.mr ? bi.mr->lkey : 0;
            w.bind_access = int(bi.mw_access_flags);
            break;
        }
        case IBV_WR_LOCAL_INV:
            w.imm_or_inv = wr.invalidate_rkey;
            break;
        default:
            break;
    }
    if (wr.opcode == IBV_WR_SEND_WITH_IMM || wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
        w.imm_or_inv = wr.imm_data;
    if (wr.opcode == IBV_WR_SEND_WITH_INV) w.imm_or_inv = wr.invalidate_rkey;
    if (sq_tx_ == sq_count_ && !rnr_wait_) last_progress_ns_ = pass_ns_;  // read by the caller
    ++sq_count_;
    return 0;
}

int Qp::post_send(ibv_send_wr *wr, ibv_send_wr **bad) {
    Lock lk(mu_);
    const ibv_qp_state st = qp_base.state;
    if (destroyed_ || st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR) {
        if (bad) *bad = wr;
        return refuse(EINVAL, "ibv_post_send", "the QP is in %s: sending needs RTS (or ERR)",
                      destroyed_ ? "destruction" : qp_state_name(st));
    }
    const bool datagram = qp_base.qp_type == IBV_QPT_UD || qp_base.qp_type == IBV_QPT_RAW_PACKET;
    if (datagram && st != IBV_QPS_ERR) {
        for (; wr; wr = wr->next) {
            if (int e = qp_base.qp_type == IBV_QPT_UD ? ud_post_one(*wr) : raw_post_one(*wr)) {
                if (bad) *bad = wr;
                return e;
            }
        }
        return 0;
    }
    pass_ns_ = now_ns();  // one clock read per post: the requests' and the pass's
    idle_polls_ = 0;      // a request held back by defer_send leaves at the next poll
    bool queued = false;
    for (; wr; wr = wr->next) {
        if (st == IBV_QPS_RTS && try_direct(*wr, lk)) continue;
        queued = true;
        if (int e = post_one_send(*wr, lk)) {
            if (bad) *bad = wr;
            if (st == IBV_QPS_ERR)
                flush_all(lk);
            else
                progress(lk, true, pass_ns_);
            return e;
        }
    }
    // Sending needs no read first: incoming ACKs are the poller's (or the engine's) to take,
    // and a recv() that finds nothing would sit on the latency path of every post.
    if (st == IBV_QPS_ERR) {
        flush_all(lk);
    } else if (queued && !defer_send(lk)) {
        progress(lk, false, pass_ns_);
        note_flush(true);
    }
    return 0;
}

// Doorbell batching. On loopback a send() costs several microseconds (the kernel runs the
// receiver's TCP path inside it), so a stream of small messages is bound by syscalls, one
// each. While an application thread polls this QP's CQs and a pipeline of work is already on
// the wire, work requests wait (up to kBatchMaxBytes in all) and leave together in one sendmsg:
// at the next poll that finds nothing, when kBatchMaxWrs are waiting, or after kBatchFlushNs
// (the engine's timer), whichever comes first; while the application's posts and polls are
// what flushes batches, the timer is the poller window's instead. A lone request (ping-pong,
// the head of a burst) leaves at once, so latency is untouched.
bool Qp::defer_send(Lock &) {
    if (!tx_batching() || qp_base.state != IBV_QPS_RTS || !stream_ || tx_blocked_ || rnr_wait_)
        return false;
    const uint32_t waiting = sq_count_ - sq_tx_;  // this request included
    if (sq_tx_ < kBatchMinInFlight || waiting >= kBatchMaxWrs) return false;
    // Runs on every post: no walk over the waiting requests.
    const SendWqe &first = sq_[sq_slot(*this, sq_tx_)];
    const SendWqe &last = sq_[sq_slot(*this, sq_count_ - 1)];
    if (last.bytes_before + last.total_len - first.bytes_before > kBatchMaxBytes) return false;
    if (!poller_active(pass_ns_)) return false;
    // The flush timer wakes the engine thread, which on two CPUs preempts an application
    // thread: a stream of small posts paid one wake-up per batch or so, though the next
    // poll sent each batch within microseconds. While the application's calls are what
    // flushes batches, the poller-window timer is the backstop; once the engine had to
    // flush one, the short timer is back.
    if (waiting == 1)
        arm_timer_at(pass_ns_ + (app_flushes_ ? kPollerWindowNs : kBatchFlushNs), pass_ns_);
    held_ = true;
    return true;
}

int Qp::post_recv(ibv_recv_wr *wr, ibv_recv_wr **bad) {
    Lock lk(mu_);
    const bool xrc = qp_base.qp_type == IBV_QPT_XRC_SEND || qp_base.qp_type == IBV_QPT_XRC_RECV;
    if (destroyed_ || srq_ || xrc || rss_table_ || qp_base.state == IBV_QPS_RESET) {
        if (bad) *bad = wr;
        return refuse(EINVAL, "ibv_post_recv", "%s",
                      xrc          ? "an XRC QP has no receive queue (XRC receives go to XRC SRQs)"
                      : srq_       ? "the QP takes its receives from an SRQ (use ibv_post_srq_recv)"
                      : rss_table_ ? "an RSS QP receives into its table's WQs (ibv_post_wq_recv)"
                                   : "the QP is in RESET or being destroyed");
    }
    if (const int err = rq_.post(wr, bad)) return err;
    if (qp_base.state == IBV_QPS_ERR) flush_all(lk);
    return 0;
}

// ---------------------------------------------------------------------------- completions

void Qp::complete_send(SendWqe &w, ibv_wc_status st) {
    if (st != IBV_WC_SUCCESS) stats_->add(stats::kCompletionErr);
    const bool signalled = sq_sig_all_ || (w.flags & IBV_SEND_SIGNALED);
    if (st == IBV_WC_SUCCESS && !signalled) return;
    ibv_wc wc{};
    wc.wr_id = w.wr_id;
    wc.status = st;
    wc.opcode = wc_opcode_for(w.opcode);
    wc.qp_num = qp_base.qp_num;
    if (st == IBV_WC_SUCCESS) {
        if (w.opcode == IBV_WR_RDMA_READ) wc.byte_len = uint32_t(w.total_len);
        if (is_atomic(w.opcode) || w.opcode == IBV_WR_ATOMIC_WRITE) wc.byte_len = 8;
    }
    ++completions_;
    if (!scq_->push(wc, false)) report_async(IBV_EVENT_CQ_ERR, scq_);
}

void Qp::complete_recv(const RecvWqe &r, ibv_wc_status st, ibv_wc_opcode op, uint32_t byte_len,
                       uint32_t imm, unsigned wc_flags, bool solicited) {
    if (st != IBV_WC_SUCCESS) stats_->add(stats::kCompletionErr);
    ibv_wc wc{};
    wc.wr_id = r.wr_id;
    wc.status = st;
    wc.opcode = op;
    wc.byte_len = byte_len;
    wc.qp_num = qp_base.qp_num;
    wc.src_qp = remote_qpn_;
    wc.wc_flags = wc_flags;
    if (wc_flags & IBV_WC_WITH_IMM) wc.imm_data = imm;
    if (wc_flags & IBV_WC_WITH_INV) wc.invalidated_rkey = imm;
    ++completions_;
    if (!rcq_->push(wc, solicited)) report_async(IBV_EVENT_CQ_ERR, rcq_);
}

void Qp::retire_sends() {
    while (sq_count_ && sq_tx_ && sq_[sq_head_].done) {
        SendWqe &w = sq_[sq_head_];
        complete_send(w, w.status);
        if (w.status == IBV_WC_SUCCESS && fault_plan().active) roll_completion_faults();
        if (++sq_head_ == uint32_t(sq_.size())) sq_head_ = 0;
        --sq_count_;
        --sq_tx_;
    }
    if (qp_base.state == IBV_QPS_SQD && sq_count_ == 0 && attr_.en_sqd_async_notify)
        report_async(IBV_EVENT_SQ_DRAINED);
}

void Qp::flush_all(Lock &) {
    ud_flush_pending_error();
    // Send queue: in order; a WQE that already has its own error keeps it.
    while (sq_count_) {
        SendWqe &w = sq_[sq_head_];
        ibv_wc_status st = w.done ? w.status : IBV_WC_WR_FLUSH_ERR;
        if (st == IBV_WC_SUCCESS && !w.done) st = IBV_WC_WR_FLUSH_ERR;
        complete_send(w, st);
        if (++sq_head_ == uint32_t(sq_.size())) sq_head_ = 0;
        --sq_count_;
    }
    sq_tx_ = 0;
    tx_off_ = 0;
    tx_imm_stage_ = false;
    rd_outstanding_ = 0;
    if (recv_active_) {
        complete_recv(cur_recv_, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0, false);
        recv_active_ = false;
    }
    if (!srq_) {
        while (!rq_.empty()) {
            complete_recv(rq_.front(), IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0, false);
            rq_.pop();
        }
    }
}

void Qp::move_to_error(Lock &lk) {
    const bool was_err = qp_base.state == IBV_QPS_ERR && !stream_;
    qp_base.state = IBV_QPS_ERR;
    attr_.qp_state = IBV_QPS_ERR;
    stats_->state.store(uint8_t(IBV_QPS_ERR), std::memory_order_relaxed);
    publish_responder();
    if (stream_) {
        // What this QP executed is acknowledged before the connection closes: a NIC ACKs on
        // arrival, so a peer never learns of our error before its delivered sends complete.
        flush_ack(lk);
        transport::ProgressEngine::get().unwatch(stream_->fd());
        stream_.reset();
    }
    auto hs = std::move(handshake_);
    connecting_ = false;
    fatal_pending_ = term_pending_ = false;
    ctrl_.clear();
    resp_count_ = 0;
    flush_all(lk);
    if (srq_ && !was_err) report_async(IBV_EVENT_QP_LAST_WQE_REACHED);
    if (hs) {
        lk.unlock();
        hs->cancel();
        lk.lock();
    }
}

void Qp::report_async(ibv_event_type t, Cq *cq) {
    ibv_async_event ev{};
    ev.event_type = t;
    if (t == IBV_EVENT_CQ_ERR)
        ev.element.cq = cq->cq();
    else
        ev.element.qp = &qp_base;
    ctx_->post_async(ev);
}

// ------------------------------------------------------------------------------- progress

// Work the peer has to answer for: requests on the wire, or queued behind a TCP connection
// that takes no more bytes (the path or the peer stopped), or with no connection at all.
bool Qp::awaiting_peer() const {
    return sq_count_ > 0 && (sq_tx_ > 0 || !stream_ || tx_blocked_);
}

uint64_t Qp::retry_budget_ns(bool tcp_recovering) const {
    if (attr_.timeout == 0) return 0;       // 0 = wait forever
    uint64_t t = 4096ull << attr_.timeout;  // 4.096 us * 2^timeout, in ns
    // TCP retransmits no sooner than its minimum RTO: while it is recovering lost segments,
    // each attempt lasts at least that long.
    if (tcp_recovering && t < kTcpMinRtoNs) t = kTcpMinRtoNs;
    return t * (uint64_t(attr_.retry_cnt) + 1);
}

uint64_t Qp::retry_deadline_ns() const {
    const uint64_t budget = retry_budget_ns(false);
    if (!budget) return 0;
    const uint64_t deadline = last_progress_ns_ + budget;
    return grace_epoch_ == last_progress_ns_ ? std::max(deadline, grace_until_ns_) : deadline;
}

// The budget ran out: ask TCP (a syscall, never on the data path); retry_policy.cpp decides.
bool Qp::grant_retry_grace(uint64_t now) {
    // Before the stream is up, the connection being made speaks for the peer: a peer stopped
    // in mid-handshake still has a kernel that takes our bytes.
    if (!stream_ && !handshake_) return false;
    grace_epoch_ = last_progress_ns_;
    const PathHealth path = stream_ ? stream_->path_health(retry_budget_ns(false))
                                    : handshake_->path_health(retry_budget_ns(false));
    const RetryBudget b{last_progress_ns_, retry_budget_ns(false), retry_budget_ns(true),
                        attr_.retry_cnt};
    grace_until_ns_ = retry_grace_until(b, path, now);
    // Fresh news for the next look: a probe (CONTROL CREDITS, ignored on receipt).
    if (path.answering && ext_) queue_control(wire::ControlType::kCredits, 0, 0);
    return grace_until_ns_ != 0;
}

void Qp::progress(Lock &lk, bool rx, uint64_t now, bool poller) {
    if (destroyed_) return;
    // A clock read costs as much as the rest of an empty poll: one per pass.
    pass_ns_ = now ? now : now_ns();
    idle_polls_ = 0;
    const ibv_qp_state st = qp_base.state;
    if (qp_base.qp_type == IBV_QPT_UD || qp_base.qp_type == IBV_QPT_RAW_PACKET) {
        // Drain in every state: datagrams for a QP not yet in RTR are dropped, as on hardware.
        if (rx) qp_base.qp_type == IBV_QPT_UD ? ud_progress(lk) : raw_progress(lk);
        update_interest(lk);
        return;
    }
    if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR) return;
    if (!stream_) {
        if (!connecting_ && i_dial() && pass_ns_ >= next_dial_ns_) start_connect(lk);
        arm_timer(lk);
        return;
    }
    // Connections that never carry a request (a connection storm, cmtime) never pay for a
    // shared-memory segment: the offer waits for the first request, sent or received. With
    // shared regions it goes at once: a pipeline of WRITEs or READs that starts on the rings
    // stays there (a request goes straight only when nothing is outstanding).
    if (shm_offer_due_ && (sq_count_ || executed_seq_ || recv_active_ || shm_regions_enabled())) {
        shm_offer_due_ = false;
        shm_offer();
    }
    bool progressed_rx = false;
    if (rx) {
        // Looked at before it is cleared: an exchange is a locked instruction on every pass.
        if (sock_event_.load(std::memory_order_relaxed) &&
            sock_event_.exchange(false, std::memory_order_relaxed))
            stream_->socket_event();
        const uint32_t completions = completions_;
        auto rs = stream_->pump_rx(*this, 256, progressed_rx);
        if (destroyed_ || !stream_) return;
        // The pass's own reading: update_interest measures from it (a later one would
        // look like a time in the future and end the engine's spin at once).
        if (progressed_rx && stream_->shm_rx()) ring_rx_ns_ = pass_ns_;
        if (rs != transport::IoStatus::kOk) {
            // A frame we cannot accept ends the connection, with a TERMINATE that says why.
            if (stream_->protocol_error()) stream_->send_terminate(stream_->rx_fault());
            return on_stream_lost(lk, stream_->protocol_error());
        }
        if (poller && completions_ != completions && ends_pass_early()) {
            // The rest of the pass (an ACK that can still ride on a request, the timers)
            // is the next poll's or post's; a pending timer covers a poller that stops.
            arm_timer_at(pass_ns_ + kPollerWindowNs, pass_ns_);
            return;
        }
    }
    bool blocked;
    auto ts = stream_->pump_tx(*this, blocked);
    if (ts != transport::IoStatus::kOk) {
        // The peer may have left its last frames (a NAK, a TERMINATE) before it closed, and
        // on shared memory they sit in the ring, not in front of the socket's end: read them
        // before calling the connection lost.
        const bool was_fatal = fatal_pending_;
        bool more;
        stream_->pump_rx(*this, 256, more);
        if (destroyed_ || !stream_) return;
        if (fatal_pending_ && !was_fatal) {
            move_to_error(lk);
            if (cm_managed_ && cm_hook_) transport::ProgressEngine::get().post(cm_hook_);
            return;
        }
        return on_stream_lost(lk, false);
    }
    if (fatal_pending_ && !term_pending_ && !stream_->tx_pending()) {
        // Our NAK/TERMINATE went out: the connection ends here, as iWARP closes after one.
        move_to_error(lk);
        if (cm_managed_ && cm_hook_) transport::ProgressEngine::get().post(cm_hook_);
        return;
    }
    if (injected_ != InjectedFault::kNone) return apply_injected_fault(lk);
    tx_blocked_ = blocked;
    update_interest(lk);
    arm_timer(lk, pass_ns_);
    if (!progressed_rx && quiet()) idle_polls_ = kIdlePolls;
}

// A poller's pass made completions: the poller is spinning for them, and on shared memory
// the rest of the pass (sending, interest, timers) costs as much again before it sees them.
// It returns at once when nothing is owed the peer now: nothing queued or half sent, no
// response, control frame or TERMINATE, and an ACK, if any, not yet due.
bool Qp::ends_pass_early() const {
    return stream_->shm_tx() && stream_->shm_rx() && !stream_->tx_pending() && owes_nothing() &&
           (executed_seq_ == acked_sent_ || pass_ns_ < ack_due_ns_);
}

// Nothing to send or answer, ACKs aside: no request waiting or blocked, no control frame,
// TERMINATE, resync or response owed, no injected fault due.
bool Qp::owes_nothing() const {
    return !tx_blocked_ && sq_tx_ == sq_count_ && ctrl_.empty() && !term_pending_ &&
           !fatal_pending_ && !send_resync_ && resp_count_ == 0 &&
           injected_ == InjectedFault::kNone;
}

bool Qp::ring_idle() const {
    return stream_ && stream_->shm_idle() && !sock_event_.load(std::memory_order_relaxed);
}

bool Qp::quiet() const {
    return ring_idle() && owes_nothing() && executed_seq_ == acked_sent_;
}

bool Qp::injected_rnr() {
    const double p = fault_plan().rnr;
    return p > 0 && reliable() && dice_.roll(p);
}

void Qp::roll_completion_faults() {
    const FaultPlan &f = fault_plan();
    if (injected_ != InjectedFault::kNone) return;
    if (f.qp_error_after && ++sends_completed_ == f.qp_error_after)
        injected_ = InjectedFault::kFatal;
    else if (cm_managed_ && dice_.roll(f.disconnect))
        injected_ = InjectedFault::kDisconnect;
}

void Qp::apply_injected_fault(Lock &lk) {
    const InjectedFault what = injected_;
    injected_ = InjectedFault::kNone;
    SR_DEBUG("qp %u: injected %s", qp_base.qp_num,
             what == InjectedFault::kFatal ? "QP error" : "disconnect");
    move_to_error(lk);  // flushes what is left; the peer sees the connection end
    if (what == InjectedFault::kFatal) {
        report_async(IBV_EVENT_QP_FATAL);
    } else if (cm_hook_) {
        // As if the peer had disconnected: the CM reports DISCONNECTED here too.
        transport::ProgressEngine::get().post(cm_hook_);
    }
}

bool Qp::poller_active(uint64_t now) const {
    const uint64_t last =
        std::max(scq_ ? scq_->last_poll_ns() : 0, rcq_ ? rcq_->last_poll_ns() : 0);
    return last && within_ns(now, last, kPollerWindowNs);
}

// The engine watches the socket (one-shot) only while no application thread is polling
// this QP's CQs: a poller drives the QP itself, and an engine thread that took the QP lock
// and was then preempted would stall it for a whole time slice.
void Qp::update_interest(Lock &) {
    const int fd = stream_ ? stream_->fd() : ud_fd_.get();
    if (fd < 0 || destroyed_) return;
    if (!stream_) mcast_interest();
    const uint64_t now = pass_ns_;  // this runs on every poll: no clock read of its own
    if (poller_active(now)) {
        // An event will come and the engine stand down then; but on shared memory no event
        // comes unless we asked the peer for one, which we do only once nobody polls.
        if (armed_mask_ && !(stream_ && stream_->shm_rx())) return;
        arm_timer_at(now + kPollerWindowNs, now);
        return;
    }
    // Frames came through the ring a moment ago: in a burst more follow, and being woken
    // through the socket costs far more (a send() by the peer, a wake-up of this thread)
    // than looking again. The engine keeps reading for a while (SOFTRDMA_ENGINE_SPIN_US),
    // on every turn, without a timer each time (on_spin).
    if (ring_spinning(now)) {
        if (!spinning_) {
            spinning_ = true;
            transport::ProgressEngine::get().spin(shared_from_this());
        }
        return;
    }
    // On shared memory the peer wakes us with a byte on the socket, after it wrote or once
    // it made room (so no EPOLLOUT); data that came in the meantime is read now.
    if (stream_ && stream_->shm_sleep()) arm_timer_at(now, now);
    if (tx_blocked_ && stream_ && stream_->shm_wait_room()) arm_timer_at(now, now);
    const bool want_out = tx_blocked_ && stream_ && !stream_->shm_tx();
    const uint32_t want =
        stream_ ? EPOLLIN | EPOLLRDHUP | EPOLLONESHOT | (want_out ? uint32_t(EPOLLOUT) : 0u)
                : EPOLLIN | EPOLLONESHOT;
    if (armed_mask_ == want) return;
    // Publish before arming: the event may fire (and on_io clear the mask) before
    // epoll_ctl even returns.
    armed_mask_ = want;
    if (!transport::ProgressEngine::get().rearm(fd, shared_from_this(), want)) armed_mask_ = 0;
}

void Qp::progress_from_poller(uint64_t now) {
    Lock lk(mu_, std::try_to_lock);
    if (!lk.owns_lock()) return;  // someone else is progressing this QP right now
    // Most polls of a busy-polling program find nothing: those cost one look at the ring.
    // The rest of quiet() changes only under this lock, by a pass or by a post (which ends
    // the idle run).
    if (idle_polls_ && --idle_polls_ && ring_idle()) return;
    progress(lk, true, now, true);
    note_flush(true);
}

// Hardware acknowledges what it received regardless of the application; a deferred ACK
// must not die with the QP or the process.
void Qp::flush_ack(Lock &) {
    if (!stream_ || !ext_ || executed_seq_ == acked_sent_) return;
    wire::SegmentHeader h;
    h.op = wire::RdmapOp::kControl;
    h.qn = wire::kQnControl;
    h.payload_len = wire::kControlLen;
    uint8_t ack[wire::kControlLen];
    wire::encode_control({wire::ControlType::kAck, executed_seq_, 0}, ack);
    if (stream_->send_now(h, ack)) {
        acked_sent_ = executed_seq_;
    } else if (stream_->tx_pending()) {
        // Mid-frame: go through the regular path once, ACK due now.
        ack_due_ns_ = 1;
        bool blocked;
        stream_->pump_tx(*this, blocked);
    }
}

void Qp::kick_engine() {
    // The application is about to sleep on a completion channel: hand the QP back.
    Lock lk(mu_);
    progress(lk);
    note_flush(false);  // it will not be calling: the next held batch gets the short timer
}

bool Qp::ring_spinning(uint64_t now) const {
    return stream_ && stream_->shm_rx() && ring_rx_ns_ &&
           within_ns(now, ring_rx_ns_, ring_spin_ns());
}

// The engine's look at a ring it reads on every turn. Most turns find nothing: those cost a
// try_lock and a look at the ring's head, not a pass.
bool Qp::on_spin() {
    CallbackGuard g(*this);
    if (!g.alive) return false;
    Lock lk(mu_, std::try_to_lock);
    if (!lk.owns_lock()) {
        // Being progressed or posted to right now: look again next turn. But a thread that
        // holds the lock most of the time (one posting 64 KiB direct WRITEs, each a copy under
        // it) kept the spin going for a whole run, every turn finding the lock taken, and on a
        // CPU the two share took 40% of it. After a few such turns, wait for the lock.
        if (++spin_lock_misses_ < kSpinLockMisses) return true;
        lk.lock();
    }
    spin_lock_misses_ = 0;
    auto keep = [this](uint64_t now) {
        return !destroyed_ && !poller_active(now) && ring_spinning(now);
    };
    if (keep(now_ns()) && ring_idle()) return true;
    // Frames came, or the spin is over (the pass then asks the peer for a wake-up), or a
    // poller took over. spinning_ is still set: the pass does not register us again.
    if (!destroyed_) {
        progress(lk);
        note_flush(false);  // an engine pass, as on_timer's
    }
    spinning_ = keep(pass_ns_);
    return spinning_;
}

void Qp::on_io(uint32_t) {
    CallbackGuard g(*this);
    if (!g.alive) return;
    armed_mask_ = 0;  // one-shot: the event disarmed the fd
    sock_event_.store(true, std::memory_order_relaxed);
    drive_from_engine();
}

// The engine saw a socket event: progress, unless a poller owns this QP right now.
void Qp::drive_from_engine() {
    if (poller_active()) {
        // A poller owns this QP now; look again after the poll window.
        arm_timer_at(now_ns() + kPollerWindowNs);
        return;
    }
    // Nobody polls: whoever holds the lock is only posting, which is short.
    Lock lk(mu_);
    progress(lk);
    note_flush(false);
}

// Held requests (defer_send) all left: say whether the application's own call sent them.
void Qp::note_flush(bool by_app) {
    if (!held_ || sq_tx_ != sq_count_) return;
    held_ = false;
    app_flushes_ = by_app;
}

void Qp::arm_timer(Lock &, uint64_t now) {
    if (destroyed_) return;
    uint64_t when = UINT64_MAX;
    if (rnr_wait_) when = std::min(when, rnr_resume_ns_);
    if (!stream_ && !connecting_ && next_dial_ns_ && i_dial()) when = std::min(when, next_dial_ns_);
    if (!rnr_wait_ && reliable() && awaiting_peer()) {
        if (const uint64_t deadline = retry_deadline_ns()) when = std::min(when, deadline);
    }
    if (when != UINT64_MAX) arm_timer_at(when, now);
}

void Qp::arm_timer_at(uint64_t when, uint64_t now) {
    uint64_t cur = timer_at_.load();
    if (cur && cur <= when && cur > now) return;
    timer_at_.store(when);
    transport::ProgressEngine::get().schedule(shared_from_this(), when);
}

void Qp::on_timer() {
    CallbackGuard g(*this);
    if (!g.alive) return;
    Lock lk(mu_, std::defer_lock);
    if (poller_active()) {
        if (!lk.try_lock()) {
            arm_timer_at(now_ns() + kPollerWindowNs);
            return;
        }
    } else {
        lk.lock();
    }
    timer_at_.store(0);
    if (destroyed_) return;
    const uint64_t now = now_ns();
    if (rnr_wait_ && now >= rnr_resume_ns_) {
        rnr_wait_ = false;
        send_resync_ = true;
        last_progress_ns_ = now;
    }
    const uint64_t deadline = retry_deadline_ns();
    if (deadline && now >= deadline && awaiting_peer() && !rnr_wait_ && reliable() &&
        qp_base.state != IBV_QPS_ERR && !grant_retry_grace(now)) {
        // Nothing acknowledged within timeout * (retry_cnt + 1): the peer is gone.
        for (uint32_t i = 0; i < sq_count_; ++i) {
            SendWqe &w = sq_[sq_slot(*this, i)];
            if (!w.done) {
                w.done = true;
                w.status = IBV_WC_RETRY_EXC_ERR;
                break;
            }
        }
        SR_DEBUG(
            "qp %u: retry budget exhausted: %llu ms since progress, budget %llu ms, "
            "%u in flight of %u, stream %d, tx blocked %d",
            qp_base.qp_num, (unsigned long long)((now - last_progress_ns_) / 1'000'000),
            (unsigned long long)(retry_budget_ns(false) / 1'000'000), sq_tx_, sq_count_,
            stream_ != nullptr, tx_blocked_);
        move_to_error(lk);
        return;
    }
    progress(lk);
    note_flush(false);
}

}  // namespace softrdma::verbs
