// SPDX-License-Identifier: BSD-2-Clause
// Shared receive queue: receive WQEs that any attached QP may consume, with the limit event.
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "verbs/parent_domain.h"
#include "verbs/work_queue.h"

namespace softrdma::verbs {

class Context;
class Cq;
struct Xrcd;

class Srq : public ibv_srq {
  public:
    // `mem` provides the ring (a parent domain's allocators, or the heap).
    Srq(ibv_context *ctx, ibv_pd *pd, const ibv_srq_attr &attr, void *user_ctx,
        std::unique_ptr<DomainMemory> mem = nullptr);
    // XRC: the domain, the CQ its receives complete on, its number.
    void make_xrc(Xrcd *xrcd, Cq *cq, uint32_t srqn) {
        xrcd_ = xrcd;
        cq_ = cq;
        srqn_ = srqn;
    }
    Xrcd *xrcd() const { return xrcd_; }
    Cq *cq() const { return cq_; }
    uint32_t srqn() const { return srqn_; }
    ~Srq();
    static Srq *from(ibv_srq *s) { return static_cast<Srq *>(s); }

    int post(ibv_recv_wr *wr, ibv_recv_wr **bad);
    // Takes the oldest WQE; false when empty. May raise the SRQ limit event.
    bool take(RecvWqe &out, std::vector<Sge> &sges);
    int modify(const ibv_srq_attr &attr, int mask);
    void query(ibv_srq_attr &attr);

    void add_user() { users_.fetch_add(1); }
    void drop_user() { users_.fetch_sub(1); }
    bool busy() const { return users_.load() > 0; }

  private:
    std::mutex mu_;
    std::unique_ptr<DomainMemory> mem_;
    RecvQueue rq_;
    uint32_t max_wr_;
    uint32_t max_sge_;
    uint32_t limit_ = 0;
    std::atomic<int> users_{0};
    Xrcd *xrcd_ = nullptr;
    Cq *cq_ = nullptr;
    uint32_t srqn_ = 0;
};

}  // namespace softrdma::verbs
