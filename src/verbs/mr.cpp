// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/mr.h"

#include "verbs/pd.h"

#include <cerrno>
#include <mutex>
#include <shared_mutex>

#include "verbs/key_table.h"
#include "verbs/odp.h"

namespace softrdma::verbs {

bool mr_table_add(Mr *mr) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    const uint32_t key = t.add({mr, nullptr});
    if (!key) return false;
    mr->lkey = mr->rkey = key;
    return true;
}

bool mr_table_add_as(Mr *mr, uint32_t want) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    uint32_t key = t.add_exact(want, {mr, nullptr});
    if (!key) key = t.add({mr, nullptr});
    if (!key) return false;
    mr->lkey = mr->rkey = key;
    return true;
}

int mr_table_remove(Mr *mr) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    if (mr->windows) return EINVAL;
    KeySlot *s = t.at(mr->lkey);
    if (s && s->mr == mr) t.remove(mr->lkey);
    return 0;
}

void mr_table_change(Mr *mr, const MrChange &c) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    if (c.pd) {
        mr->owner = c.pd;
        mr->pd = c.handle ? c.handle : c.pd;
    }
    if (c.access >= 0) mr->access = c.access;
    if (c.host) {
        mr->addr = c.host;
        mr->host = c.host;
        mr->length = c.length;
        mr->iova = (mr->access & IBV_ACCESS_ZERO_BASED) ? 0 : uint64_t(uintptr_t(c.host));
    }
}

KeyCheck mr_check(uint32_t key, const Pd *pd, uint64_t iova, uint64_t len, int access,
                  MemView &out) {
    KeyTable &t = key_table();
    std::shared_lock lk(t.mu);
    const KeySlot *s = t.at(key);
    if (!s || !s->mr || s->mr->lkey != key) return KeyCheck::kBadKey;
    return mr_range(*s->mr, pd, iova, len, access, out);
}

KeyCheck mr_range(const Mr &mr, const Pd *pd, uint64_t iova, uint64_t len, int access,
                  MemView &out) {
    out.foreign = mr.foreign;
    out.atomics = mr.table;
    if (len == 0) {  // IB: a zero-length access needs only a valid key
        out.host = mr.host;
        return KeyCheck::kOk;
    }
    if (mr.owner != pd) return KeyCheck::kBadPd;
    if ((mr.access & access) != access) return KeyCheck::kAccess;
    if (iova < mr.iova || len > mr.length || iova - mr.iova > mr.length - len)
        return KeyCheck::kBounds;
    // Integer arithmetic: an implicit region's host base is address 0.
    const uintptr_t host = uintptr_t(mr.host) + uintptr_t(iova - mr.iova);
    // On demand: the pages need not exist; a fault hardware could not serve is an access
    // error here too, never a crash.
    if ((mr.access & IBV_ACCESS_ON_DEMAND) && !mr.foreign && !range_mapped(host, len))
        return KeyCheck::kBounds;
    out.host = reinterpret_cast<uint8_t *>(host);
    return KeyCheck::kOk;
}

void mr_publish(Mr &mr) {
    if (!mr.stats) mr.stats = stats::claim_mr();
    stats::MrSlot &s = *mr.stats;
    constexpr auto r = std::memory_order_relaxed;
    s.handle.store(mr.handle, r);
    s.lkey.store(mr.lkey, r);
    s.rkey.store(mr.rkey, r);
    s.access.store(mr.access, r);
    s.pd_handle.store(mr.owner ? mr.owner->handle : 0, r);
    s.addr.store(uint64_t(uintptr_t(mr.addr)), r);
    s.length.store(mr.length, r);
    s.owner_pid.store(mr.foreign.pid, r);
    s.live.store(1, std::memory_order_release);
}

void mr_unpublish(Mr &mr) {
    if (mr.stats) stats::release(mr.stats);
    mr.stats = nullptr;
}

}  // namespace softrdma::verbs
