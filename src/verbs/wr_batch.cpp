// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/wr_batch.h"

#include <cerrno>
#include <cstring>

namespace softrdma::verbs {

void WrBatch::begin() {
    wrs_.clear();
    first_sge_.clear();
    sges_.clear();
    inline_.clear();
    error_ = 0;
    open_ = true;
}

ibv_send_wr &WrBatch::add(ibv_wr_opcode op, uint64_t wr_id, unsigned flags) {
    ibv_send_wr &w = wrs_.emplace_back();
    w = ibv_send_wr{};
    w.wr_id = wr_id;
    w.send_flags = flags;
    w.opcode = op;
    first_sge_.push_back(uint32_t(sges_.size()));
    return w;
}

void WrBatch::set_sges(const ibv_sge *sg, size_t n, bool inline_data) {
    ibv_send_wr *w = last();
    if (!w) return;
    if (n > kMaxSge) return fail(EINVAL);
    sges_.resize(first_sge_.back());  // a second call replaces the first
    for (size_t i = 0; i < n; ++i) {
        ibv_sge s = sg[i];
        if (inline_data) {
            const size_t at = inline_.size();
            const auto *src = reinterpret_cast<const uint8_t *>(uintptr_t(s.addr));
            inline_.insert(inline_.end(), src, src + s.length);
            s.addr = at;
        }
        sges_.push_back(s);
    }
    w->num_sge = int(n);
    if (inline_data) w->send_flags |= IBV_SEND_INLINE;
}

void WrBatch::seal() {
    for (size_t i = 0; i < wrs_.size(); ++i) {
        ibv_send_wr &w = wrs_[i];
        ibv_sge *sg = sges_.data() + first_sge_[i];
        w.sg_list = w.num_sge ? sg : nullptr;
        if (w.send_flags & IBV_SEND_INLINE)
            for (int k = 0; k < w.num_sge; ++k)
                sg[k].addr = uint64_t(uintptr_t(inline_.data() + sg[k].addr));
    }
}

}  // namespace softrdma::verbs
