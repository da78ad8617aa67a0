// SPDX-License-Identifier: BSD-2-Clause
// Memory windows (type 1 and type 2B, as rxe implements them) and the remote key check,
// which resolves an MR's rkey or a window's.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>

#include "verbs/mr.h"

namespace softrdma::verbs {

struct Pd;

struct Mw : ibv_mw {
    // Guarded by the key table lock. `key` is the rkey remote access must present: the
    // application's copy (ibv_mw::rkey) follows it for type 1 only, as rdma-core's does.
    uint32_t key = 0;
    bool bound = false;  // type 2 starts free; type 1 is valid (with no memory) from the start
    Mr *mr = nullptr;
    uint64_t addr = 0;  // the window, in the region's address space
    uint64_t length = 0;
    int access = 0;
    uint32_t qpn = 0;  // type 2: the QP it was bound through, the only one that may use it
    static Mw *from(ibv_mw *m) { return static_cast<Mw *>(m); }
};

// Allocates the window's key. False when the key table is full.
bool mw_table_add(Mw *mw);
// Unbinds and frees the key: the window's rkey stops working at once.
void mw_table_remove(Mw *mw);

// One bind, as the send queue executes it.
struct MwBind {
    Mw *mw = nullptr;
    uint32_t rkey = 0;  // type 2: the key the window gets (its low byte)
    uint32_t mr_lkey = 0;
    uint64_t addr = 0, length = 0;
    int access = 0;
};
// Executes a bind posted on a QP of `pd` numbered `qpn`; false is IBV_WC_MW_BIND_ERR.
bool mw_bind(const MwBind &b, const Pd *pd, uint32_t qpn);
// Invalidates the type 2 window `rkey` names (LOCAL_INV, SEND WITH INVALIDATE); false when it
// is no such window (a region's key, a type 1 window, or not bound).
bool mw_invalidate(uint32_t rkey, const Pd *pd);

// Remote access through `key` (an MR's rkey or a bound window's) by QP `qpn` on `pd`.
KeyCheck rkey_check(uint32_t key, const Pd *pd, uint32_t qpn, uint64_t iova, uint64_t len,
                    int access, MemView &out);

}  // namespace softrdma::verbs
