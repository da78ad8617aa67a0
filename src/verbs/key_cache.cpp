// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/key_cache.h"

#include <shared_mutex>

#include "verbs/key_table.h"
#include "verbs/mw.h"

namespace softrdma::verbs {
namespace {

// What mr_range reads, and the keys: all set before a region's key is in the table, or
// changed under its exclusive lock. The rest of a region (its `softrdma res` row, its count
// of windows) changes outside that lock, so it is not copied.
void copy_checked(Mr &to, const Mr &from) {
    to.lkey = from.lkey;
    to.rkey = from.rkey;
    to.owner = from.owner;
    to.access = from.access;
    to.iova = from.iova;
    to.length = from.length;
    to.host = from.host;
    to.foreign = from.foreign;
    to.table = from.table;
}

}  // namespace

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
            copy_checked(e.mr, *s->mr);
            e.epoch = t.epoch.load(std::memory_order_relaxed);  // no change while we hold mu
            return mr_range(e.mr, pd, iova, len, access, out);
        }
    }
    return remote ? rkey_check(key, pd, qpn, iova, len, access, out) : KeyCheck::kBadKey;
}

}  // namespace softrdma::verbs
