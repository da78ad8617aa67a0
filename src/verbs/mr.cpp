#include "verbs/mr.h"

#include "verbs/pd.h"

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace softrdma::verbs {
namespace {

constexpr uint32_t kMaxMrs = 1u << 24;

struct Table {
    std::shared_mutex mu;
    std::vector<Mr *> slots;
    std::vector<uint32_t> free_list;
    uint8_t generation = 0;
};

Table &table() {
    static Table *t =
        std::make_unique<Table>().release();  // never destroyed: lookups may run during exit
    return *t;
}

}  // namespace

bool mr_table_add(Mr *mr) {
    Table &t = table();
    std::unique_lock lk(t.mu);
    uint32_t idx;
    if (!t.free_list.empty()) {
        idx = t.free_list.back();
        t.free_list.pop_back();
    } else {
        if (t.slots.size() >= kMaxMrs) return false;
        idx = uint32_t(t.slots.size());
        t.slots.push_back(nullptr);
    }
    t.slots[idx] = mr;
    // The low byte changes on every registration so a stale key does not match a new region.
    const uint32_t key = idx << 8 | ++t.generation;
    mr->lkey = mr->rkey = key;
    return true;
}

void mr_table_remove(Mr *mr) {
    Table &t = table();
    std::unique_lock lk(t.mu);
    const uint32_t idx = mr->lkey >> 8;
    if (idx < t.slots.size() && t.slots[idx] == mr) {
        t.slots[idx] = nullptr;
        t.free_list.push_back(idx);
    }
}

void mr_table_change(Mr *mr, const MrChange &c) {
    Table &t = table();
    std::unique_lock lk(t.mu);
    if (c.pd) {
        mr->owner = c.pd;
        mr->pd = c.pd;
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
    Table &t = table();
    std::shared_lock lk(t.mu);
    const uint32_t idx = key >> 8;
    if (idx >= t.slots.size() || !t.slots[idx]) return KeyCheck::kBadKey;
    const Mr *mr = t.slots[idx];
    if (mr->lkey != key) return KeyCheck::kBadKey;
    if (len == 0) {  // IB: a zero-length access needs only a valid key
        out.host = mr->host;
        return KeyCheck::kOk;
    }
    if (mr->owner != pd) return KeyCheck::kBadPd;
    if ((mr->access & access) != access) return KeyCheck::kAccess;
    if (iova < mr->iova || len > mr->length || iova - mr->iova > mr->length - len)
        return KeyCheck::kBounds;
    out.host = mr->host + (iova - mr->iova);
    return KeyCheck::kOk;
}

}  // namespace softrdma::verbs
