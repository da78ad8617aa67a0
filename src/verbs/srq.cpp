// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/srq.h"

#include <cerrno>
#include <new>

#include "common/log.h"
#include "common/stats_page.h"
#include "verbs/context.h"
#include "verbs/pd.h"

namespace softrdma::verbs {

Srq::Srq(ibv_context *ctx, ibv_pd *p, const ibv_srq_attr &attr, void *user_ctx,
         std::unique_ptr<DomainMemory> mem)
    : ibv_srq{},
      mem_(std::move(mem)),
      rq_(resource_of(mem_)),
      max_wr_(attr.max_wr),
      max_sge_(attr.max_sge),
      limit_(attr.srq_limit) {
    stats::opened(stats::Resource::kSrq);
    context = ctx;
    srq_context = user_ctx;
    pd = p;
    pthread_mutex_init(&mutex, nullptr);
    pthread_cond_init(&cond, nullptr);
    rq_.init(max_wr_, max_sge_);
}

Srq::~Srq() {
    stats::closed(stats::Resource::kSrq);
    pthread_cond_destroy(&cond);
    pthread_mutex_destroy(&mutex);
}

int Srq::post(ibv_recv_wr *wr, ibv_recv_wr **bad) {
    std::lock_guard lk(mu_);
    return rq_.post(wr, bad);
}

bool Srq::take(RecvWqe &out, std::vector<Sge> &sges) {
    bool fire = false;
    {
        std::lock_guard lk(mu_);
        if (rq_.empty()) return false;
        out = rq_.front();
        std::copy(rq_.front_sges(), rq_.front_sges() + out.num_sge, sges.begin());
        rq_.pop();
        // The limit event fires once when the queue drops below the armed limit.
        if (limit_ && rq_.count() < limit_) {
            limit_ = 0;
            fire = true;
        }
    }
    if (fire) {
        ibv_async_event ev{};
        ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
        ev.element.srq = this;
        Context::from(context)->post_async(ev);
    }
    return true;
}

int Srq::modify(const ibv_srq_attr &attr, int mask) {
    if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
        return refuse(EINVAL, "ibv_modify_srq",
                      "attr_mask 0x%x: only IBV_SRQ_MAX_WR and "
                      "IBV_SRQ_LIMIT",
                      unsigned(mask));
    // A larger ring is allocated before the lock is taken and the old one freed after it is
    // dropped: a parent domain's allocator is application code, never run under our locks.
    uint32_t cur;
    {
        std::lock_guard lk(mu_);
        cur = max_wr_;
    }
    RecvQueue bigger(rq_.resource());
    if ((mask & IBV_SRQ_MAX_WR) && attr.max_wr > cur && attr.max_wr <= uint32_t(kMaxSrqWr)) {
        try {
            bigger.init(attr.max_wr, max_sge_);
        } catch (const std::bad_alloc &) {
            return refuse(ENOMEM, "ibv_modify_srq", "no memory for %u receives", attr.max_wr);
        }
    }
    std::lock_guard lk(mu_);
    if (mask & IBV_SRQ_MAX_WR) {
        if (attr.max_wr == 0 || attr.max_wr > uint32_t(kMaxSrqWr) || attr.max_wr < rq_.count())
            return refuse(EINVAL, "ibv_modify_srq",
                          "max_wr %u: 1 to %d and at least the %zu "
                          "receives posted",
                          attr.max_wr, kMaxSrqWr, size_t(rq_.count()));
    }
    const uint32_t new_max =
        (mask & IBV_SRQ_MAX_WR) && attr.max_wr > max_wr_ ? attr.max_wr : max_wr_;
    if ((mask & IBV_SRQ_LIMIT) && attr.srq_limit > new_max)
        return refuse(EINVAL, "ibv_modify_srq", "srq_limit %u exceeds max_wr %u", attr.srq_limit,
                      new_max);
    // max_wr only grows, so a ring sized before the lock is still the one needed.
    if ((mask & IBV_SRQ_MAX_WR) && attr.max_wr > max_wr_ && bigger.depth() == attr.max_wr) {
        bigger.take_all(rq_);
        std::swap(rq_, bigger);
        max_wr_ = attr.max_wr;
    }
    if (mask & IBV_SRQ_LIMIT) limit_ = attr.srq_limit;
    return 0;
}

void Srq::query(ibv_srq_attr &attr) {
    std::lock_guard lk(mu_);
    attr.max_wr = max_wr_;
    attr.max_sge = max_sge_;
    attr.srq_limit = limit_;
}

}  // namespace softrdma::verbs
