#include "common/log.h"

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

}  // namespace softrdma
