// Diagnostics to stderr, enabled by SOFTRDMA_DEBUG=1. Never on the data path by default.
#pragma once
#include <cstdio>

namespace softrdma {

bool debug_enabled();

#define SR_DEBUG(...)                                  \
    do {                                               \
        if (::softrdma::debug_enabled()) {             \
            std::fprintf(stderr, "softrdma: " __VA_ARGS__); \
            std::fputc('\n', stderr);                  \
        }                                              \
    } while (0)

}  // namespace softrdma
