// SPDX-License-Identifier: BSD-2-Clause
// The work requests an ibv_wr_start ... ibv_wr_complete batch builds, kept apart from the QP
// until ibv_wr_complete: no QP lock is held while control is back in the application (a
// program may abandon a batch and destroy the QP). Storage is reused from batch to batch.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace softrdma::verbs {

class WrBatch {
  public:
    static constexpr size_t kMaxSge = 32;

    void begin();
    bool open() const { return open_; }
    void close() { open_ = false; }
    // A new work request of `op`, with the batch's current wr_id and flags.
    ibv_send_wr &add(ibv_wr_opcode op, uint64_t wr_id, unsigned flags);
    // The request being built (nullptr before the first one).
    ibv_send_wr *last() { return wrs_.empty() ? nullptr : &wrs_.back(); }
    // Its scatter list; inline data is copied now (the caller may reuse its buffers at once).
    void set_sges(const ibv_sge *sg, size_t n, bool inline_data);
    void fail(int err) {
        if (!error_) error_ = err;
    }
    int error() const { return error_; }
    size_t size() const { return wrs_.size(); }
    // Points every request's sg_list at the batch's own storage, once, before they are posted.
    void seal();
    const ibv_send_wr &operator[](size_t i) const { return wrs_[i]; }

  private:
    std::vector<ibv_send_wr> wrs_;
    std::vector<uint32_t> first_sge_;  // per request: its first entry in sges_
    std::vector<ibv_sge> sges_;        // inline entries hold offsets into inline_ until at()
    std::vector<uint8_t> inline_;
    int error_ = 0;
    bool open_ = false;
};

}  // namespace softrdma::verbs
