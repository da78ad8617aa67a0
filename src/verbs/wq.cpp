// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/wq.h"

#include <cerrno>
#include <memory>
#include <new>

#include "common/log.h"
#include "verbs/context.h"
#include "verbs/cq.h"
#include "verbs/pd.h"

namespace softrdma::verbs {
namespace {

std::atomic<uint32_t> g_next_wq_num{1};
std::atomic<int> g_next_table{1};

int wq_post(ibv_wq *wq, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    return Wq::from(wq)->post(wr, bad);
}

}  // namespace

Wq::Wq(ibv_context *ctx, const ibv_wq_init_attr &a, uint32_t num)
    : ibv_wq{}, max_sge_(a.max_sge), cq_(Cq::from(a.cq)) {
    context = ctx;
    wq_context = a.wq_context;
    pd = a.pd;
    cq = a.cq;
    wq_num = num;
    handle = num;
    state = IBV_WQS_RESET;
    wq_type = a.wq_type;
    post_recv = wq_post;
    pthread_mutex_init(&mutex, nullptr);
    pthread_cond_init(&cond, nullptr);
    rq_.init(a.max_wr, a.max_sge);
}

Wq::~Wq() {
    pthread_cond_destroy(&cond);
    pthread_mutex_destroy(&mutex);
}

int Wq::post(ibv_recv_wr *wr, ibv_recv_wr **bad) {
    std::unique_lock lk(mu_);
    if (const int err = rq_.post(wr, bad)) return err;
    if (state == IBV_WQS_ERR) flush(lk);
    return 0;
}

// A WQ in error completes what it holds with WR_FLUSH_ERR, as a QP's receive queue does.
void Wq::flush(std::unique_lock<std::mutex> &) {
    while (!rq_.empty()) {
        ibv_wc wc{};
        wc.wr_id = rq_.front().wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        wc.qp_num = wq_num;
        rq_.pop();
        cq_->push(wc, false);
    }
}

int Wq::modify(const ibv_wq_attr &a) {
    static constexpr const char *kVerb = "ibv_modify_wq";
    const uint32_t known = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE | IBV_WQ_ATTR_FLAGS;
    if (a.attr_mask & ~known)
        return refuse(EINVAL, kVerb, "attr_mask 0x%x has unknown bits", a.attr_mask);
    if ((a.attr_mask & IBV_WQ_ATTR_FLAGS) && (a.flags & a.flags_mask))
        return refuse(EOPNOTSUPP, kVerb, "flags 0x%x: no WQ flag is supported", a.flags);
    std::unique_lock lk(mu_);
    if ((a.attr_mask & IBV_WQ_ATTR_CURR_STATE) && a.curr_wq_state != state)
        return refuse(EINVAL, kVerb, "curr_wq_state %u, but the WQ is in %u",
                      unsigned(a.curr_wq_state), unsigned(state));
    if (!(a.attr_mask & IBV_WQ_ATTR_STATE)) return 0;
    const ibv_wq_state next = a.wq_state;
    // RESET -> RDY, RDY -> RDY, anything -> RESET or ERR (the kernel's WQ table).
    const bool ok = next == IBV_WQS_RESET || next == IBV_WQS_ERR ||
                    (next == IBV_WQS_RDY && (state == IBV_WQS_RESET || state == IBV_WQS_RDY));
    if (!ok)
        return refuse(EINVAL, kVerb, "WQ state %u -> %u is not a valid transition", unsigned(state),
                      unsigned(next));
    state = next;
    if (next == IBV_WQS_RESET) rq_.clear();
    if (next == IBV_WQS_ERR) flush(lk);
    return 0;
}

bool Wq::take(RecvWqe &out, std::vector<Sge> &sges) {
    std::lock_guard lk(mu_);
    if (state != IBV_WQS_RDY || rq_.empty()) return false;
    out = rq_.front();
    std::copy(rq_.front_sges(), rq_.front_sges() + out.num_sge, sges.begin());
    rq_.pop();
    return true;
}

ibv_wq *create_wq(ibv_context *ctx, ibv_wq_init_attr *a) {
    static constexpr const char *kVerb = "ibv_create_wq";
    if (!ctx || !a) return fail<ibv_wq>(refuse(EINVAL, kVerb, "NULL context or attributes"));
    if (a->wq_type != IBV_WQT_RQ)
        return fail<ibv_wq>(
            refuse(EINVAL, kVerb, "wq_type %u: only IBV_WQT_RQ exists", unsigned(a->wq_type)));
    if (a->comp_mask & ~uint32_t(IBV_WQ_INIT_ATTR_FLAGS))
        return fail<ibv_wq>(refuse(EINVAL, kVerb, "comp_mask 0x%x has unknown bits", a->comp_mask));
    if ((a->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && a->create_flags)
        return fail<ibv_wq>(refuse(EOPNOTSUPP, kVerb,
                                   "create_flags 0x%x: no WQ flag (VLAN stripping, scatter FCS, "
                                   "padding) is supported",
                                   a->create_flags));
    if (!a->pd || !a->cq) return fail<ibv_wq>(refuse(EINVAL, kVerb, "a WQ needs a PD and a CQ"));
    if (a->max_wr > uint32_t(kMaxQpWr) || a->max_sge > uint32_t(kMaxSge))
        return fail<ibv_wq>(refuse(EINVAL, kVerb,
                                   "max_wr %u, max_sge %u: the device allows %d and %d", a->max_wr,
                                   a->max_sge, kMaxQpWr, kMaxSge));
    a->max_wr = std::max(a->max_wr, 1u);
    a->max_sge = std::max(a->max_sge, 1u);
    std::unique_ptr<Wq> wq;
    try {
        wq = std::make_unique<Wq>(ctx, *a, g_next_wq_num.fetch_add(1));
    } catch (const std::bad_alloc &) {
        return fail<ibv_wq>(refuse(ENOMEM, kVerb, "no memory for %u receives", a->max_wr));
    }
    pd_hold(a->pd);
    wq->completion_queue()->add_user();
    return wq.release();
}

int modify_wq(ibv_wq *wq, ibv_wq_attr *a) {
    if (!wq || !a) return EINVAL;
    return Wq::from(wq)->modify(*a);
}

int destroy_wq(ibv_wq *w) {
    if (!w) return EINVAL;
    Wq *wq = Wq::from(w);
    if (wq->tables.load())
        return refuse(EBUSY, "ibv_destroy_wq", "WQ %u is in an indirection table", wq->wq_num);
    wq->completion_queue()->drop_user();
    pd_release(wq->pd);
    std::unique_ptr<Wq> owned(wq);
    return 0;
}

ibv_rwq_ind_table *create_rwq_ind_table(ibv_context *ctx, ibv_rwq_ind_table_init_attr *a) {
    static constexpr const char *kVerb = "ibv_create_rwq_ind_table";
    if (!ctx || !a || !a->ind_tbl)
        return fail<ibv_rwq_ind_table>(refuse(EINVAL, kVerb, "NULL context, attributes or table"));
    if (a->comp_mask)
        return fail<ibv_rwq_ind_table>(
            refuse(EINVAL, kVerb, "comp_mask 0x%x: none is defined", a->comp_mask));
    if (a->log_ind_tbl_size > kMaxRwqIndTableLog)
        return fail<ibv_rwq_ind_table>(refuse(EINVAL, kVerb, "log_ind_tbl_size %u: at most %u",
                                              a->log_ind_tbl_size, kMaxRwqIndTableLog));
    const size_t n = size_t(1) << a->log_ind_tbl_size;
    for (size_t i = 0; i < n; ++i)
        if (!a->ind_tbl[i])
            return fail<ibv_rwq_ind_table>(refuse(EINVAL, kVerb, "entry %zu is NULL", i));
    auto t = std::make_unique<RwqIndTable>();
    t->context = ctx;
    t->ind_tbl_handle = g_next_table.fetch_add(1);
    t->ind_tbl_num = t->ind_tbl_handle;
    t->comp_mask = 0;
    t->wqs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        Wq *wq = Wq::from(a->ind_tbl[i]);
        wq->tables.fetch_add(1);
        t->wqs.push_back(wq);
    }
    return t.release();
}

int destroy_rwq_ind_table(ibv_rwq_ind_table *table) {
    if (!table) return EINVAL;
    RwqIndTable *t = RwqIndTable::from(table);
    if (t->users.load())
        return refuse(EBUSY, "ibv_destroy_rwq_ind_table", "a QP was created over the table");
    for (Wq *wq : t->wqs) wq->tables.fetch_sub(1);
    std::unique_ptr<RwqIndTable> owned(t);
    return 0;
}

}  // namespace softrdma::verbs
