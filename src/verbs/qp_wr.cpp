// SPDX-License-Identifier: BSD-2-Clause
// The ibv_qp_ex work-request builder (ibv_wr_start ... ibv_wr_complete).
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "verbs/context.h"
#include "verbs/qp.h"
#include "verbs/qp_state_table.h"

namespace softrdma::verbs {
namespace {

Qp &Q(ibv_qp_ex *q) {
    return *static_cast<Qp *>(q);
}

}  // namespace

void Qp::wr_begin() {
    wr_batch_.begin();
}

ibv_send_wr &Qp::wr_new(ibv_wr_opcode op) {
    return wr_batch_.add(op, wr_id, wr_flags);
}

// Posts the batch under the QP lock, all or nothing; wr_abort (commit false) drops it. The lock
// is taken here only: between wr_start and wr_complete the application may do anything,
// destroying the QP included.
int Qp::wr_finish(bool commit) {
    static constexpr const char *kVerb = "ibv_wr_complete";
    WrBatch &b = wr_batch_;
    if (!b.open()) return commit ? refuse(EINVAL, kVerb, "no ibv_wr_start before it") : 0;
    b.close();
    if (!commit) return 0;
    if (b.error()) return refuse(b.error(), kVerb, "the batch holds a request this QP refused");
    b.seal();
    Lock lk(mu_);
    const ibv_qp_state st = qp_base.state;
    if (destroyed_ || st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR)
        return refuse(EINVAL, kVerb, "the QP is in %s: sending needs RTS (or ERR)",
                      destroyed_ ? "destruction" : qp_state_name(st));
    if (qp_base.qp_type == IBV_QPT_UD && st != IBV_QPS_ERR) {
        // Datagrams leave as they are posted: every request is checked before the first goes.
        for (size_t i = 0; i < b.size(); ++i)
            if (const int e = ud_check(b[i])) return e;
        for (size_t i = 0; i < b.size(); ++i)
            if (const int e = ud_post_one(b[i])) return e;
        return 0;
    }
    const uint32_t start = sq_count_;
    pass_ns_ = now_ns();  // read by post_one_send
    for (size_t i = 0; i < b.size(); ++i) {
        if (const int e = post_one_send(b[i], lk)) {
            sq_count_ = start;  // none of the batch: it was never visible to the wire
            return e;
        }
    }
    if (st == IBV_QPS_ERR)
        flush_all(lk);
    else
        progress(lk, true, pass_ns_);
    return 0;
}

void install_wr_api(Qp &qp, uint64_t) {
    qp.wr_start = [](ibv_qp_ex *q) { Q(q).wr_begin(); };
    qp.wr_complete = [](ibv_qp_ex *q) { return Q(q).wr_finish(true); };
    qp.wr_abort = [](ibv_qp_ex *q) { Q(q).wr_finish(false); };
    qp.wr_send = [](ibv_qp_ex *q) { Q(q).wr_new(IBV_WR_SEND); };
    qp.wr_send_imm = [](ibv_qp_ex *q, __be32 imm) {
        Q(q).wr_new(IBV_WR_SEND_WITH_IMM).imm_data = imm;
    };
    qp.wr_send_inv = [](ibv_qp_ex *q, uint32_t rkey) {
        Q(q).wr_new(IBV_WR_SEND_WITH_INV).invalidate_rkey = rkey;
    };
    qp.wr_rdma_write = [](ibv_qp_ex *q, uint32_t rkey, uint64_t addr) {
        auto &w = Q(q).wr_new(IBV_WR_RDMA_WRITE);
        w.wr.rdma.rkey = rkey;
        w.wr.rdma.remote_addr = addr;
    };
    qp.wr_rdma_write_imm = [](ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm) {
        auto &w = Q(q).wr_new(IBV_WR_RDMA_WRITE_WITH_IMM);
        w.wr.rdma.rkey = rkey;
        w.wr.rdma.remote_addr = addr;
        w.imm_data = imm;
    };
    qp.wr_rdma_read = [](ibv_qp_ex *q, uint32_t rkey, uint64_t addr) {
        auto &w = Q(q).wr_new(IBV_WR_RDMA_READ);
        w.wr.rdma.rkey = rkey;
        w.wr.rdma.remote_addr = addr;
    };
    qp.wr_atomic_cmp_swp = [](ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t cmp,
                              uint64_t swp) {
        auto &w = Q(q).wr_new(IBV_WR_ATOMIC_CMP_AND_SWP);
        w.wr.atomic.rkey = rkey;
        w.wr.atomic.remote_addr = addr;
        w.wr.atomic.compare_add = cmp;
        w.wr.atomic.swap = swp;
    };
    qp.wr_atomic_fetch_add = [](ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t add) {
        auto &w = Q(q).wr_new(IBV_WR_ATOMIC_FETCH_AND_ADD);
        w.wr.atomic.rkey = rkey;
        w.wr.atomic.remote_addr = addr;
        w.wr.atomic.compare_add = add;
    };
    qp.wr_atomic_write = [](ibv_qp_ex *q, uint32_t rkey, uint64_t addr, const void *data) {
        auto &w = Q(q).wr_new(IBV_WR_ATOMIC_WRITE);
        w.wr.rdma.rkey = rkey;
        w.wr.rdma.remote_addr = addr;
        // The 8 bytes are the request's own, copied now (no scatter list follows).
        const ibv_sge s{uint64_t(uintptr_t(data)), 8, 0};
        Q(q).wr_batch_.set_sges(&s, 1, true);
    };
    qp.wr_bind_mw = [](ibv_qp_ex *q, ibv_mw *mw, uint32_t rkey, const ibv_mw_bind_info *info) {
        auto &w = Q(q).wr_new(IBV_WR_BIND_MW);
        w.bind_mw.mw = mw;
        w.bind_mw.rkey = rkey;
        if (info) w.bind_mw.bind_info = *info;
    };
    qp.wr_local_inv = [](ibv_qp_ex *q, uint32_t rkey) {
        Q(q).wr_new(IBV_WR_LOCAL_INV).invalidate_rkey = rkey;
    };
    // Operations this device does not offer: the batch fails at wr_complete.
    qp.wr_send_tso = [](ibv_qp_ex *q, void *, uint16_t, uint16_t) {
        Q(q).wr_batch_.fail(refuse(EOPNOTSUPP, "ibv_wr_send_tso", "TSO exists on raw packet QPs"));
    };
    qp.wr_set_sge = [](ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t len) {
        const ibv_sge s{addr, len, lkey};
        Q(q).wr_batch_.set_sges(&s, 1, false);
    };
    qp.wr_set_sge_list = [](ibv_qp_ex *q, size_t n, const ibv_sge *sg) {
        Q(q).wr_batch_.set_sges(sg, n, false);
    };
    qp.wr_set_inline_data = [](ibv_qp_ex *q, void *addr, size_t len) {
        const ibv_sge s{uint64_t(uintptr_t(addr)), uint32_t(len), 0};
        Q(q).wr_batch_.set_sges(&s, 1, true);
    };
    qp.wr_set_inline_data_list = [](ibv_qp_ex *q, size_t n, const ibv_data_buf *bufs) {
        if (n > WrBatch::kMaxSge) return Q(q).wr_batch_.fail(EINVAL);
        ibv_sge s[WrBatch::kMaxSge];
        for (size_t i = 0; i < n; ++i)
            s[i] = {uint64_t(uintptr_t(bufs[i].addr)), uint32_t(bufs[i].length), 0};
        Q(q).wr_batch_.set_sges(s, n, true);
    };
    qp.wr_set_ud_addr = [](ibv_qp_ex *q, ibv_ah *ah, uint32_t qpn, uint32_t qkey) {
        if (ibv_send_wr *w = Q(q).wr_batch_.last()) {
            w->wr.ud.ah = ah;
            w->wr.ud.remote_qpn = qpn;
            w->wr.ud.remote_qkey = qkey;
        }
    };
    qp.wr_set_xrc_srqn = [](ibv_qp_ex *q, uint32_t srqn) {
        if (ibv_send_wr *w = Q(q).wr_batch_.last()) w->qp_type.xrc.remote_srqn = srqn;
    };
}

}  // namespace softrdma::verbs
