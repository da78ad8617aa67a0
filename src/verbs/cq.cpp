// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/cq.h"

#include <algorithm>
#include <cerrno>
#include <new>

#include "common/clock.h"
#include "common/log.h"
#include "common/stats_page.h"
#include "verbs/comp_channel.h"
#include "verbs/qp.h"

namespace softrdma::verbs {
namespace {

Cq *self(ibv_cq_ex *c) {
    return Cq::from_ex(c);
}

}  // namespace

Cq::Cq(ibv_context *ctx, int cqe_req, CompChannel *chan, void *user_ctx, uint64_t wc_flags,
       std::unique_ptr<DomainMemory> mem)
    : ibv_cq_ex{},
      stamps_(wc_flags & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                          IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)),
      chan_(chan),
      mem_(std::move(mem)),
      ring_(resource_of(mem_)),
      ts_(resource_of(mem_)) {
    stats::opened(stats::Resource::kCq);
    context = ctx;
    channel = chan;
    cq_context = user_ctx;
    cqe = cqe_req;
    pthread_mutex_init(&mutex, nullptr);
    pthread_cond_init(&cond, nullptr);
    ring_.resize(size_t(cqe_req) + 1);
    ts_.resize(ring_.size());
    if (chan_) chan_->attach();
    start_poll = &Cq::start_poll_cb;
    next_poll = &Cq::next_poll_cb;
    end_poll = &Cq::end_poll_cb;
    read_opcode = [](ibv_cq_ex *c) { return self(c)->cur_.opcode; };
    read_vendor_err = [](ibv_cq_ex *c) { return self(c)->cur_.vendor_err; };
    read_byte_len = [](ibv_cq_ex *c) { return self(c)->cur_.byte_len; };
    read_imm_data = [](ibv_cq_ex *c) { return self(c)->cur_.imm_data; };
    read_qp_num = [](ibv_cq_ex *c) { return self(c)->cur_.qp_num; };
    read_src_qp = [](ibv_cq_ex *c) { return self(c)->cur_.src_qp; };
    read_wc_flags = [](ibv_cq_ex *c) { return unsigned(self(c)->cur_.wc_flags); };
    read_slid = [](ibv_cq_ex *c) { return uint32_t(self(c)->cur_.slid); };
    read_sl = [](ibv_cq_ex *c) { return self(c)->cur_.sl; };
    read_dlid_path_bits = [](ibv_cq_ex *c) { return self(c)->cur_.dlid_path_bits; };
    read_completion_ts = [](ibv_cq_ex *c) { return self(c)->cur_ts_; };
    read_cvlan = [](ibv_cq_ex *) { return uint16_t(0); };
    read_flow_tag = [](ibv_cq_ex *) { return uint32_t(0); };
    read_tm_info = [](ibv_cq_ex *, ibv_wc_tm_info *tm) { *tm = {}; };
    read_completion_wallclock_ns = [](ibv_cq_ex *c) { return self(c)->cur_ts_; };
}

Cq::~Cq() {
    stats::closed(stats::Resource::kCq);
    if (chan_) {
        chan_->forget(this);
        chan_->detach();
    }
    pthread_cond_destroy(&cond);
    pthread_mutex_destroy(&mutex);
}

bool Cq::push(const ibv_wc &wc, bool solicited) {
    CompChannel *notify = nullptr;
    {
        std::lock_guard lk(mu_);
        if (count_ == ring_.size()) {
            overrun_ = true;
            return false;
        }
        size_t slot = head_ + count_;  // both below the size: no division per completion
        if (slot >= ring_.size()) slot -= ring_.size();
        ring_[slot] = wc;
        if (stamps_) ts_[slot] = clock_ns();  // a clock read per completion only when asked for
        ++count_;
        ready_.store(true, std::memory_order_release);
        // Solicited-only arming also fires for error completions (IB spec 11.4.2.2).
        if (armed_ && (!solicited_only_ || solicited || wc.status != IBV_WC_SUCCESS)) {
            armed_ = false;
            armed_flag_.store(false, std::memory_order_relaxed);
            notify = chan_;
        }
    }
    if (notify) notify->notify(this);
    return true;
}

void Cq::purge(uint32_t qpn) {
    std::lock_guard lk(mu_);
    size_t kept = 0;
    for (size_t i = 0; i < count_; ++i) {
        const size_t from = (head_ + i) % ring_.size();
        if (ring_[from].qp_num == qpn) continue;
        const size_t to = (head_ + kept++) % ring_.size();
        ring_[to] = ring_[from];
        ts_[to] = ts_[from];
    }
    count_ = kept;
    ready_.store(kept != 0, std::memory_order_relaxed);
}

int Cq::pop(int n, ibv_wc *wc) {
    std::lock_guard lk(mu_);
    const int k = int(std::min<size_t>(size_t(n), count_));
    for (int i = 0; i < k; ++i) {
        wc[i] = ring_[head_];
        if (++head_ == ring_.size()) head_ = 0;
    }
    count_ -= size_t(k);
    ready_.store(count_ != 0, std::memory_order_relaxed);
    return k;
}

void Cq::progress_qps(uint64_t now) {
    std::lock_guard lk(qps_mu_);
    for (Qp *qp : qps_) qp->progress_from_poller(now);
}

int Cq::poll(int n, ibv_wc *wc) {
    if (n < 0) return -EINVAL;
    const uint64_t now = now_ns();  // the only clock read of an empty poll
    last_poll_.store(now, std::memory_order_relaxed);
    if (ready_.load(std::memory_order_acquire)) {
        if (const int k = pop(n, wc)) return k;
    }
    progress_qps(now);
    return ready_.load(std::memory_order_acquire) ? pop(n, wc) : 0;
}

int Cq::arm(bool solicited_only) {
    {
        std::lock_guard lk(mu_);
        if (!chan_) return refuse(EINVAL, "ibv_req_notify_cq", "the CQ has no completion channel");
        // A stronger request (any completion) is not weakened by a later solicited-only one.
        if (!armed_ || !solicited_only) solicited_only_ = solicited_only;
        armed_ = true;
        armed_flag_.store(true, std::memory_order_relaxed);
    }
    // Arming means the caller will sleep: the engine takes its QPs back at once.
    if (last_poll_.exchange(0, std::memory_order_relaxed)) {
        std::lock_guard lk(qps_mu_);
        for (Qp *qp : qps_) qp->kick_engine();
    }
    return 0;
}

int Cq::resize(int new_cqe) {
    // The new ring is allocated before the lock is taken and the old one freed after it is
    // dropped: a parent domain's allocator is application code, never run under our locks.
    std::pmr::vector<ibv_wc> r(resource_of(mem_));
    std::pmr::vector<uint64_t> t(resource_of(mem_));
    try {
        r.resize(size_t(new_cqe) + 1);
        t.resize(r.size());
    } catch (const std::bad_alloc &) {
        return refuse(ENOMEM, "ibv_resize_cq", "the CQ's allocator gave no memory");
    }
    std::lock_guard lk(mu_);
    if (new_cqe < 1 || size_t(new_cqe) < count_)
        return refuse(EINVAL, "ibv_resize_cq", "cqe %d: fewer than the %zu completions it holds",
                      new_cqe, count_);
    for (size_t i = 0; i < count_; ++i) {
        r[i] = ring_[(head_ + i) % ring_.size()];
        t[i] = ts_[(head_ + i) % ring_.size()];
    }
    ring_.swap(r);
    ts_.swap(t);
    head_ = 0;
    cqe = new_cqe;
    return 0;
}

void Cq::attach(Qp *qp) {
    std::lock_guard lk(qps_mu_);
    if (std::find(qps_.begin(), qps_.end(), qp) == qps_.end()) qps_.push_back(qp);
}

void Cq::detach(Qp *qp) {
    std::lock_guard lk(qps_mu_);
    qps_.erase(std::remove(qps_.begin(), qps_.end(), qp), qps_.end());
}

void Cq::ack_events(unsigned n) {
    std::lock_guard lk(mu_);
    events_acked_ += n;
    acked_cv_.notify_all();
}

void Cq::wait_events_acked() {
    std::unique_lock lk(mu_);
    acked_cv_.wait(lk, [&] { return events_acked_ >= events_reported_; });
}

int Cq::start_poll_cb(ibv_cq_ex *c, ibv_poll_cq_attr *attr) {
    if (attr && attr->comp_mask)
        return refuse(EINVAL, "ibv_start_poll", "comp_mask 0x%x: none is defined", attr->comp_mask);
    return next_poll_cb(c);
}

int Cq::next_poll_cb(ibv_cq_ex *c) {
    Cq *cq = self(c);
    ibv_wc wc;
    if (cq->poll(1, &wc) != 1) return ENOENT;
    {
        std::lock_guard lk(cq->mu_);
        const size_t prev = (cq->head_ + cq->ring_.size() - 1) % cq->ring_.size();
        cq->cur_ts_ = cq->ts_[prev];
    }
    cq->cur_ = wc;
    cq->status = wc.status;
    cq->wr_id = wc.wr_id;
    return 0;
}

void Cq::end_poll_cb(ibv_cq_ex *) {}

}  // namespace softrdma::verbs
