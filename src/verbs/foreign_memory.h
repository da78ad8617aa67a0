// SPDX-License-Identifier: BSD-2-Clause
// Memory of another process: a region imported from a shared verbs context
// (verbs/export_table.h) stays in the process that registered it. The data path reaches it
// with process_vm_readv/writev (never through a pointer here), inside the publication's
// enter/leave so its owner cannot withdraw it halfway.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "verbs/export_table.h"

namespace softrdma::verbs {

struct ForeignRegion {
    pid_t pid = 0;  // 0: the region is this process's own memory
    ExportTable *table = nullptr;
    ExportRef ref;
    explicit operator bool() const { return pid != 0; }
};

// Copy [addr, addr+n) of the owner's memory out or in. False when the region was withdrawn,
// the owner is gone, or the kernel refuses (another user, Yama): the caller reports an
// access error, as hardware does for a region that went away.
bool foreign_read(const ForeignRegion &f, uint64_t addr, void *dst, size_t n);
bool foreign_write(const ForeignRegion &f, uint64_t addr, const void *src, size_t n);

}  // namespace softrdma::verbs
