// SPDX-License-Identifier: BSD-2-Clause
// Completion queue: a ring of work completions filled by whichever thread progresses a QP,
// and the arming state of completion-channel notification.
#pragma once
#include "verbs/parent_domain.h"
#include <infiniband/verbs.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace softrdma::verbs {

class Qp;
class CompChannel;

class Cq : public ibv_cq_ex {
  public:
    // `mem` provides the ring (a parent domain's allocators, or the heap).
    Cq(ibv_context *ctx, int cqe, CompChannel *chan, void *user_ctx, uint64_t wc_flags,
       std::unique_ptr<DomainMemory> mem = nullptr);
    ~Cq();
    static Cq *from(ibv_cq *c) { return static_cast<Cq *>(reinterpret_cast<ibv_cq_ex *>(c)); }
    static Cq *from_ex(ibv_cq_ex *c) { return static_cast<Cq *>(c); }
    ibv_cq *cq() { return reinterpret_cast<ibv_cq *>(static_cast<ibv_cq_ex *>(this)); }

    // Called with the producing QP's lock held. Returns false on overrun.
    bool push(const ibv_wc &wc, bool solicited);
    int poll(int n, ibv_wc *wc);
    int arm(bool solicited_only);
    int resize(int cqe);

    // QPs (and SRQ users) whose progress a poller of this CQ drives.
    void attach(Qp *qp);
    void detach(Qp *qp);
    bool busy() const { return users_.load() > 0; }
    void add_user() { users_.fetch_add(1); }
    void drop_user() { users_.fetch_sub(1); }

    // ibv_get_cq_event / ibv_ack_cq_events accounting; destroy waits for acks.
    // Drops the completions of QP `qpn` still in the ring (the QP went to RESET).
    void purge(uint32_t qpn);
    void event_reported() {
        std::lock_guard lk(mu_);
        ++events_reported_;
    }
    void ack_events(unsigned n);
    void wait_events_acked();

    CompChannel *channel_obj() const { return chan_; }
    // When an application thread last polled, or 0 while the CQ is armed for an event
    // (its owner is about to sleep on the channel, so nobody will poll).
    uint64_t last_poll_ns() const {
        return armed_flag_.load(std::memory_order_relaxed)
                   ? 0
                   : last_poll_.load(std::memory_order_relaxed);
    }

  private:
    int pop(int n, ibv_wc *wc);
    void progress_qps(uint64_t now);
    static int start_poll_cb(ibv_cq_ex *cq, ibv_poll_cq_attr *attr);
    static int next_poll_cb(ibv_cq_ex *cq);
    static void end_poll_cb(ibv_cq_ex *cq);

    const bool stamps_;  // the CQ was created to report completion timestamps
    CompChannel *chan_;
    std::mutex mu_;
    std::unique_ptr<DomainMemory> mem_;
    std::pmr::vector<ibv_wc> ring_;
    std::pmr::vector<uint64_t> ts_;  // completion time per ring entry (ns, monotonic)
    size_t head_ = 0, count_ = 0;
    // count_ != 0, readable without mu_: an empty poll takes no lock for the ring.
    std::atomic<bool> ready_{false};
    bool armed_ = false, solicited_only_ = false;
    bool overrun_ = false;
    unsigned events_reported_ = 0, events_acked_ = 0;
    std::condition_variable_any acked_cv_;
    std::mutex qps_mu_;
    std::vector<Qp *> qps_;
    std::atomic<int> users_{0};
    std::atomic<uint64_t> last_poll_{0};   // when an application thread last polled
    std::atomic<bool> armed_flag_{false};  // mirrors armed_ for lock-free readers
    ibv_wc cur_{};                         // the entry the extended poll API is positioned on
    uint64_t cur_ts_ = 0;
};

}  // namespace softrdma::verbs
