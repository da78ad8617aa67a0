// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/key_table.h"

#include <algorithm>
#include <memory>

namespace softrdma::verbs {

KeyTable &key_table() {
    static KeyTable *t = std::make_unique<KeyTable>().release();
    return *t;
}

uint32_t KeyTable::add(KeySlot s) {
    uint32_t idx;
    if (!free_list.empty()) {
        idx = free_list.back();
        free_list.pop_back();
    } else {
        if (slots.size() >= kMaxSlots) return 0;
        idx = uint32_t(slots.size());
        slots.emplace_back();
    }
    slots[idx] = s;
    // Slot 0's first key would be 0, which callers read as "full": skip generation 0 there.
    uint8_t g = ++generation;
    if (idx == 0 && g == 0) g = ++generation;
    return idx << 8 | g;
}

uint32_t KeyTable::add_exact(uint32_t key, KeySlot s) {
    const uint32_t idx = key >> 8;
    if (key == 0 || idx >= kMaxSlots) return 0;
    if (idx >= slots.size()) {
        for (uint32_t i = uint32_t(slots.size()); i < idx; ++i) free_list.push_back(i);
        slots.resize(size_t(idx) + 1);
    } else {
        auto it = std::find(free_list.begin(), free_list.end(), idx);
        if (it == free_list.end()) return 0;
        free_list.erase(it);
    }
    slots[idx] = s;
    return key;
}

void KeyTable::remove(uint32_t key) {
    KeySlot *s = at(key);
    if (!s) return;
    *s = KeySlot{};
    free_list.push_back(key >> 8);
}

}  // namespace softrdma::verbs
