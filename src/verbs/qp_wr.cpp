// The ibv_qp_ex work-request builder (ibv_wr_start ... ibv_wr_complete).
#include <cerrno>
#include <cstring>

#include "verbs/context.h"
#include "verbs/qp.h"

namespace softrdma::verbs {
namespace {

Qp &Q(ibv_qp_ex *q) { return *static_cast<Qp *>(q); }

}  // namespace

void Qp::wr_begin() {
    mu_.lock();  // held until wr_complete / wr_abort, as providers do
    wr_start_count_ = sq_count_;
    wr_error_ = 0;
    wr_staged_ = false;
}

void Qp::wr_flush_stage() {
    if (!wr_staged_) return;
    wr_staged_ = false;
    if (wr_error_) return;
    Lock lk(mu_, std::adopt_lock);
    const ibv_qp_state st = qp_base.state;
    if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR) wr_error_ = EINVAL;
    else wr_error_ = post_one_send(wr_stage_, lk);
    lk.release();
}

ibv_send_wr &Qp::wr_new(ibv_wr_opcode op) {
    wr_flush_stage();
    wr_stage_ = ibv_send_wr{};
    wr_stage_.wr_id = wr_id;
    wr_stage_.send_flags = wr_flags;
    wr_stage_.opcode = op;
    wr_staged_ = true;
    return wr_stage_;
}

void Qp::wr_set_sges(const ibv_sge *sg, size_t n, bool inline_data) {
    if (!wr_staged_) return;
    if (n > 32) {
        wr_error_ = EINVAL;
        return;
    }
    std::memcpy(wr_sges_, sg, n * sizeof(ibv_sge));
    wr_stage_.sg_list = wr_sges_;
    wr_stage_.num_sge = int(n);
    if (inline_data) wr_stage_.send_flags |= IBV_SEND_INLINE;
}

int Qp::wr_finish(bool commit) {
    wr_flush_stage();
    Lock lk(mu_, std::adopt_lock);
    if (!commit || wr_error_) {
        sq_count_ = wr_start_count_;  // drop everything staged since wr_start
        return commit ? wr_error_ : 0;
    }
    if (qp_base.state == IBV_QPS_ERR) flush_all(lk);
    else progress(lk);
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
    // Operations this device does not offer: the batch fails at wr_complete.
    qp.wr_atomic_write = [](ibv_qp_ex *q, uint32_t, uint64_t, const void *) {
        Q(q).wr_flush_stage();
        Q(q).wr_error_ = EOPNOTSUPP;
    };
    qp.wr_bind_mw = [](ibv_qp_ex *q, ibv_mw *, uint32_t, const ibv_mw_bind_info *) {
        Q(q).wr_flush_stage();
        Q(q).wr_error_ = EOPNOTSUPP;
    };
    qp.wr_local_inv = [](ibv_qp_ex *q, uint32_t) {
        Q(q).wr_flush_stage();
        Q(q).wr_error_ = EOPNOTSUPP;
    };
    qp.wr_send_tso = [](ibv_qp_ex *q, void *, uint16_t, uint16_t) {
        Q(q).wr_flush_stage();
        Q(q).wr_error_ = EOPNOTSUPP;
    };
    qp.wr_set_sge = [](ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t len) {
        const ibv_sge s{addr, len, lkey};
        Q(q).wr_set_sges(&s, 1, false);
    };
    qp.wr_set_sge_list = [](ibv_qp_ex *q, size_t n, const ibv_sge *sg) {
        Q(q).wr_set_sges(sg, n, false);
    };
    qp.wr_set_inline_data = [](ibv_qp_ex *q, void *addr, size_t len) {
        const ibv_sge s{uint64_t(uintptr_t(addr)), uint32_t(len), 0};
        Q(q).wr_set_sges(&s, 1, true);
    };
    qp.wr_set_inline_data_list = [](ibv_qp_ex *q, size_t n, const ibv_data_buf *bufs) {
        ibv_sge s[32];
        if (n > 32) n = 33;
        for (size_t i = 0; i < n && i < 32; ++i)
            s[i] = {uint64_t(uintptr_t(bufs[i].addr)), uint32_t(bufs[i].length), 0};
        Q(q).wr_set_sges(s, n, true);
    };
    qp.wr_set_ud_addr = [](ibv_qp_ex *q, ibv_ah *ah, uint32_t qpn, uint32_t qkey) {
        auto &w = Q(q).wr_stage_;
        w.wr.ud.ah = ah;
        w.wr.ud.remote_qpn = qpn;
        w.wr.ud.remote_qkey = qkey;
    };
    qp.wr_set_xrc_srqn = [](ibv_qp_ex *q, uint32_t srqn) {
        Q(q).wr_stage_.qp_type.xrc.remote_srqn = srqn;
    };
}

}  // namespace softrdma::verbs
