// SPDX-License-Identifier: BSD-2-Clause
#include "common/log.h"

#include <cstdarg>
#include <cstdlib>
#include <cstring>

namespace softrdma {

bool debug_enabled() {
    static const bool on = [] {
        const char *v = std::getenv("SOFTRDMA_DEBUG");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

int refuse(int err, const char *verb, const char *why, ...) {
    if (debug_enabled()) {
        const char *name = strerrorname_np(err);
        std::fprintf(stderr, "softrdma: %s: %s: ", verb, name ? name : "error");
        va_list ap;
        va_start(ap, why);
        std::vfprintf(stderr, why, ap);
        va_end(ap);
        std::fputc('\n', stderr);
    }
    return err;
}

}  // namespace softrdma
