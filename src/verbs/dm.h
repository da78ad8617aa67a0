// SPDX-License-Identifier: BSD-2-Clause
// Device memory (ibv_alloc_dm). On a NIC it is memory on the card, reached through
// ibv_memcpy_to/from_dm and through MRs registered on it; here the device is the library, so
// it is memory the library owns, with the same rules: 4-byte aligned copies inside the
// allocation, zero-based MRs, a per-device budget (max_dm_size).
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace softrdma::verbs {

constexpr uint64_t kMaxDmSize = 256 * 1024;

struct Dm : ibv_dm {
    struct Free {
        void operator()(uint8_t *p) const;
    };
    std::unique_ptr<uint8_t, Free> mem;
    size_t length = 0;
    std::atomic<int> mrs{0};  // MRs registered on it: free fails with EBUSY while > 0
    static Dm *from(ibv_dm *d) { return static_cast<Dm *>(d); }
};

ibv_dm *alloc_dm(ibv_context *ctx, ibv_alloc_dm_attr *attr);
int free_dm(ibv_dm *dm);
// The same object, found by handle through an imported context (verbs/shared_objects.h).
ibv_dm *import_dm(ibv_context *ctx, uint32_t handle);
ibv_mr *reg_dm_mr(ibv_pd *pd, ibv_dm *dm, uint64_t offset, size_t length, unsigned access);

}  // namespace softrdma::verbs
