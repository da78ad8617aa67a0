// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/foreign_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace softrdma::verbs {
namespace {

// process_vm_* may move fewer bytes than asked (a page boundary, a signal): go on until all
// moved or the kernel says no.
template <typename Call>
bool move_all(const ForeignRegion &f, uint64_t addr, uint8_t *local, size_t n, Call call,
              const char *what) {
    if (!f.table || !f.table->enter(f.ref)) {
        SR_DEBUG("imported region of pid %d: withdrawn by its owner; %s refused", int(f.pid), what);
        return false;
    }
    bool ok = true;
    while (n) {
        iovec l{local, n};
        iovec r{reinterpret_cast<void *>(uintptr_t(addr)), n};
        const ssize_t k = call(f.pid, &l, 1, &r, 1, 0);
        if (k <= 0) {
            SR_DEBUG("imported region of pid %d: %s of %zu bytes at %#llx failed: %s", int(f.pid),
                     what, n, (unsigned long long)addr, k < 0 ? strerror(errno) : "no progress");
            ok = false;
            break;
        }
        local += k;
        addr += uint64_t(k);
        n -= size_t(k);
    }
    f.table->leave(f.ref);
    return ok;
}

}  // namespace

bool foreign_read(const ForeignRegion &f, uint64_t addr, void *dst, size_t n) {
    return move_all(f, addr, static_cast<uint8_t *>(dst), n, ::process_vm_readv, "read");
}

bool foreign_write(const ForeignRegion &f, uint64_t addr, const void *src, size_t n) {
    return move_all(f, addr, static_cast<uint8_t *>(const_cast<void *>(src)), n,
                    ::process_vm_writev, "write");
}

}  // namespace softrdma::verbs
