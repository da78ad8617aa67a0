// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/key_table.h"

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

void KeyTable::remove(uint32_t key) {
    KeySlot *s = at(key);
    if (!s) return;
    *s = KeySlot{};
    free_list.push_back(key >> 8);
}

}  // namespace softrdma::verbs
