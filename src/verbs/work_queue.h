// SPDX-License-Identifier: BSD-2-Clause
// Fixed-capacity work queues: allocated at QP/SRQ creation, nothing per operation after.
#pragma once
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <memory_resource>
#include <vector>

namespace softrdma::verbs {

struct Sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

struct RecvWqe {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
    uint64_t total_len = 0;
};

// Receive WQEs with their scatter lists stored side by side.
class RecvQueue {
  public:
    // `mem` provides the rings (a parent domain's allocators, or the heap).
    explicit RecvQueue(std::pmr::memory_resource *mem = std::pmr::get_default_resource())
        : wqes_(mem), sges_(mem) {}
    void init(uint32_t depth, uint32_t max_sge) {
        wqes_.assign(depth, {});
        sges_.assign(size_t(depth) * max_sge, {});
        max_sge_ = max_sge;
        head_ = count_ = 0;
    }
    // Empties the queue, keeping its memory (no allocation: RESET runs under the QP lock and
    // must not call a parent domain's allocator from there).
    void clear() { head_ = count_ = 0; }
    uint32_t depth() const { return uint32_t(wqes_.size()); }
    uint32_t count() const { return count_; }
    bool full() const { return count_ == wqes_.size(); }
    bool empty() const { return count_ == 0; }

    // Queues a chain of receive WRs with ibv_post_recv's checks: EINVAL for a bad scatter
    // list, ENOMEM when full; `bad` names the first WR not queued.
    int post(ibv_recv_wr *wr, ibv_recv_wr **bad) {
        for (; wr; wr = wr->next) {
            int err = 0;
            if (wr->num_sge < 0 || uint32_t(wr->num_sge) > max_sge_ ||
                (wr->num_sge > 0 && !wr->sg_list))
                err = EINVAL;
            else if (full())
                err = ENOMEM;
            if (err) {
                if (bad) *bad = wr;
                return err;
            }
            push(*wr);
        }
        return 0;
    }

    // Caller checked num_sge <= max_sge and !full().
    void push(const ibv_recv_wr &wr) {
        uint32_t slot = head_ + count_;  // both below the depth: no division per post
        if (slot >= depth()) slot -= depth();
        RecvWqe &w = wqes_[slot];
        w.wr_id = wr.wr_id;
        w.num_sge = uint32_t(wr.num_sge);
        w.total_len = 0;
        for (int i = 0; i < wr.num_sge; ++i) {
            sges_[size_t(slot) * max_sge_ + size_t(i)] = {wr.sg_list[i].addr, wr.sg_list[i].length,
                                                          wr.sg_list[i].lkey};
            w.total_len += wr.sg_list[i].length;
        }
        ++count_;
    }
    RecvWqe &front() { return wqes_[head_]; }
    const Sge *front_sges() const { return &sges_[size_t(head_) * max_sge_]; }
    void pop() {
        if (++head_ == depth()) head_ = 0;
        --count_;
    }
    // Moves every entry of `from` (oldest first) into this larger, empty queue: ibv_modify_srq
    // growing max_wr. The caller allocates this queue before taking its lock.
    void take_all(RecvQueue &from) {
        while (!from.empty()) {
            const uint32_t slot = (head_ + count_) % depth();
            wqes_[slot] = from.front();
            for (uint32_t i = 0; i < max_sge_; ++i)
                sges_[size_t(slot) * max_sge_ + i] = from.front_sges()[i];
            ++count_;
            from.pop();
        }
    }
    std::pmr::memory_resource *resource() const { return wqes_.get_allocator().resource(); }

  private:
    std::pmr::vector<RecvWqe> wqes_;
    std::pmr::vector<Sge> sges_;
    uint32_t max_sge_ = 1;
    uint32_t head_ = 0, count_ = 0;
};

}  // namespace softrdma::verbs
