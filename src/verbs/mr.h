// SPDX-License-Identifier: BSD-2-Clause
// Memory regions: registration and the local key check (remote keys: verbs/mw.h).
#pragma once
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "common/stats_page.h"
#include "verbs/foreign_memory.h"

namespace softrdma::verbs {

struct Pd;
struct Dm;

struct Mr : ibv_mr {
    Pd *owner = nullptr;
    int access = 0;
    uint64_t iova = 0;        // address the keys are valid for
    uint8_t *host = nullptr;  // where iova maps in this process
    int windows = 0;          // memory windows bound to it (key table lock)
    Dm *dm = nullptr;         // registered on device memory (ibv_reg_dm_mr)
    // Imported from another process (ibv_import_mr of a shared context): `host` is then an
    // address in that process, reached only through foreign_read/foreign_write.
    ForeignRegion foreign;
    // The table of the context the region belongs to: its lock orders atomics on the region
    // between processes that share the context.
    ExportTable *table = nullptr;
    stats::MrSlot *stats = nullptr;  // what `softrdma res` shows of it
    uint64_t shared_lo = 0;          // its pages are in the region file from here (region_file.h)
    static Mr *from(ibv_mr *m) { return static_cast<Mr *>(m); }
};

// A checked window of memory, valid only while the region stays registered.
struct MemView {
    uint8_t *host;
    ForeignRegion foreign{};         // set: `host` is an address in foreign.pid
    ExportTable *atomics = nullptr;  // whose lock an atomic on this memory takes
};

enum class KeyCheck { kOk, kBadKey, kBadPd, kBounds, kAccess };

// Registers `mr` and assigns lkey == rkey. Returns false when the table is full (ENOMEM).
bool mr_table_add(Mr *mr);
// The same with `key` when it is free here (an imported region keeps its owner's key), any
// other key otherwise.
bool mr_table_add_as(Mr *mr, uint32_t key);
// Fails (EINVAL, as rxe) while windows are bound to the region.
int mr_table_remove(Mr *mr);
// ibv_rereg_mr: what changes (a NULL pd or host, a negative access: unchanged). The keys stay
// (as rxe and mlx5 keep them); the change is atomic to every key check.
struct MrChange {
    Pd *pd = nullptr;          // the protection domain
    ibv_pd *handle = nullptr;  // what the application passed (a parent domain stays one)
    int access = -1;
    uint8_t *host = nullptr;
    size_t length = 0;
};
void mr_table_change(Mr *mr, const MrChange &c);
// Resolves [iova, iova+len) of an MR's key `key` on `pd` with all of `access` bits required
// (0 = local read only). Zero-length accesses need only a valid key. Window keys never
// match here: a window is reached only by remote access.
KeyCheck mr_check(uint32_t key, const Pd *pd, uint64_t iova, uint64_t len, int access,
                  MemView &out);
// The region's own checks (PD, rights, bounds) once its key has matched. Key table lock held,
// or on KeyCache's copy of the fields it reads (key_cache.cpp: copy_checked).
KeyCheck mr_range(const Mr &mr, const Pd *pd, uint64_t iova, uint64_t len, int access,
                  MemView &out);

// `softrdma res`: the region's row (claimed on first call), kept as it changes; and its end.
void mr_publish(Mr &mr);
void mr_unpublish(Mr &mr);

constexpr int kRemoteAccessMask =
    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

}  // namespace softrdma::verbs
