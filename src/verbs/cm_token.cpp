// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/cm_token.h"

#include <array>
#include <mutex>

namespace softrdma::verbs {
namespace {

struct Slot {
    bool used = false;
    std::weak_ptr<Qp> qp;
};
std::mutex g_mu;
std::array<Slot, kCmTokenMax + 1> g_slots;

}  // namespace

uint32_t cm_token_alloc() {
    std::lock_guard lk(g_mu);
    for (uint32_t t = kCmTokenMin; t <= kCmTokenMax; ++t)
        if (!g_slots[t].used) {
            g_slots[t] = {true, {}};
            return t;
        }
    return 0;
}

void cm_token_free(uint32_t token) {
    if (!is_cm_token(token)) return;
    std::lock_guard lk(g_mu);
    g_slots[token] = {};
}

void cm_token_bind(uint32_t token, const std::shared_ptr<Qp> &qp) {
    if (!is_cm_token(token)) return;
    std::lock_guard lk(g_mu);
    if (g_slots[token].used) g_slots[token].qp = qp;
}

std::shared_ptr<Qp> cm_token_qp(uint32_t token) {
    if (!is_cm_token(token)) return nullptr;
    std::lock_guard lk(g_mu);
    return g_slots[token].qp.lock();
}

}  // namespace softrdma::verbs
