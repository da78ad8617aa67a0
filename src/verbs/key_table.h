// SPDX-License-Identifier: BSD-2-Clause
// The key space shared by memory regions and memory windows: a key's upper 24 bits index a
// slot, its low byte tells registrations of one slot apart. Every incoming WRITE/READ/atomic
// resolves its key here, under the shared lock; registration, binding and invalidation take
// it exclusively (KeyTableChange), so a key check sees a change whole or not at all.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace softrdma::verbs {

struct Mr;
struct Mw;

struct KeySlot {
    Mr *mr = nullptr;
    Mw *mw = nullptr;
};

struct KeyTable {
    static constexpr uint32_t kMaxSlots = 1u << 24;
    std::shared_mutex mu;
    std::vector<KeySlot> slots;
    std::vector<uint32_t> free_list;
    uint8_t generation = 0;
    // Moves on with every change (under the exclusive lock): a check remembered while it had
    // this value is still what the table says (KeyCache), without taking the lock.
    std::atomic<uint64_t> epoch{1};

    // Takes a free slot for `s` and returns its key, or 0 when the table is full. Caller
    // holds mu exclusively.
    uint32_t add(KeySlot s);
    // Takes exactly `key` for `s` if its slot is free (0 if not). Caller holds mu
    // exclusively.
    uint32_t add_exact(uint32_t key, KeySlot s);
    void remove(uint32_t key);
    // The slot `key` indexes, or nullptr. Caller holds mu.
    KeySlot *at(uint32_t key) {
        const uint32_t idx = key >> 8;
        return idx < slots.size() ? &slots[idx] : nullptr;
    }
};

// The exclusive lock for a change to the table, or to a region or window in it; the epoch
// moves on before the lock is released.
class KeyTableChange {
  public:
    explicit KeyTableChange(KeyTable &t) : t_(t), lk_(t.mu) {}
    ~KeyTableChange() { t_.epoch.fetch_add(1, std::memory_order_release); }
    KeyTableChange(const KeyTableChange &) = delete;
    KeyTableChange &operator=(const KeyTableChange &) = delete;

  private:
    KeyTable &t_;
    std::unique_lock<std::shared_mutex> lk_;
};

// Never destroyed: key checks may run while the process exits.
KeyTable &key_table();

}  // namespace softrdma::verbs
