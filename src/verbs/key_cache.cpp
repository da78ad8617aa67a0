// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/key_cache.h"

#include <shared_mutex>

#include "verbs/key_table.h"
#include "verbs/mw.h"

namespace softrdma::verbs {

KeyCheck KeyCache::check(uint32_t key, bool remote, const Pd *pd, uint32_t qpn, uint64_t iova,
                         uint64_t len, int access, MemView &out) {
    KeyTable &t = key_table();
    // Acquire, against the release that ends every change: an unchanged epoch means the copy
    // is what the table holds now.
    const uint64_t epoch = t.epoch.load(std::memory_order_acquire);
    for (const Entry &e : e_) {
        if (e.epoch == epoch && (remote ? e.mr.rkey : e.mr.lkey) == key)
            return mr_range(e.mr, pd, iova, len, access, out);
    }
    {
        std::shared_lock lk(t.mu);
        const KeySlot *s = t.at(key);
        if (s && s->mr && (remote ? s->mr->rkey : s->mr->lkey) == key) {
            Entry &e = e_[next_];
            next_ ^= 1;
            e.mr = *s->mr;
            e.epoch = t.epoch.load(std::memory_order_relaxed);  // no change while we hold mu
            return mr_range(e.mr, pd, iova, len, access, out);
        }
    }
    return remote ? rkey_check(key, pd, qpn, iova, len, access, out) : KeyCheck::kBadKey;
}

}  // namespace softrdma::verbs
