// SPDX-License-Identifier: BSD-2-Clause
// Diagnostics to stderr, enabled by SOFTRDMA_DEBUG=1. Never on the data path by default.
#pragma once
#include <cerrno>
#include <cstdio>

namespace softrdma {

bool debug_enabled();

#define SR_DEBUG(...)                                       \
    do {                                                    \
        if (::softrdma::debug_enabled()) {                  \
            std::fprintf(stderr, "softrdma: " __VA_ARGS__); \
            std::fputc('\n', stderr);                       \
        }                                                   \
    } while (0)

// A verb refuses an argument: under SOFTRDMA_DEBUG, one line naming the verb, the errno and
// which attribute and why (a user whose ibv_modify_qp fails must be able to see that RoCE
// needs a GRH). Returns `err`, so refusals read `return refuse(EINVAL, "ibv_x", "...")`.
int refuse(int err, const char *verb, const char *why, ...) __attribute__((format(printf, 3, 4)));

// A verb that returns an object fails the C way: errno set, NULL returned; refusals read
// `return fail<ibv_qp>(refuse(EINVAL, "ibv_x", "..."))`.
template <typename T>
T *fail(int err) {
    errno = err;
    return nullptr;
}

}  // namespace softrdma
