// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/dm.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "common/tsan_annotations.h"
#include "verbs/context.h"
#include "verbs/mr.h"
#include "verbs/pd.h"
#include "verbs/verbs_ops.h"

namespace softrdma::verbs {
namespace {

// What is left of each device's budget (per process: the memory is the process's).
std::mutex g_budget_mu;
uint64_t g_used = 0;

// mlx5's rule: offset and length in 4-byte units, inside the allocation.
bool range_ok(const Dm &dm, uint64_t off, size_t len) {
    return off % 4 == 0 && len % 4 == 0 && off <= dm.length && len <= dm.length - off;
}

int copy_to(ibv_dm *d, uint64_t off, const void *host, size_t len) {
    Dm &dm = *Dm::from(d);
    if (!range_ok(dm, off, len))
        return refuse(EINVAL, "ibv_memcpy_to_dm",
                      "offset %llu + %zu: 4-byte aligned and inside the %zu bytes",
                      (unsigned long long)off, len, dm.length);
    AppMemoryAccess app;  // peers may read it through an MR at the same time
    std::memcpy(dm.mem.get() + off, host, len);
    return 0;
}

int copy_from(void *host, ibv_dm *d, uint64_t off, size_t len) {
    Dm &dm = *Dm::from(d);
    if (!range_ok(dm, off, len))
        return refuse(EINVAL, "ibv_memcpy_from_dm",
                      "offset %llu + %zu: 4-byte aligned and inside the %zu bytes",
                      (unsigned long long)off, len, dm.length);
    AppMemoryAccess app;
    std::memcpy(host, dm.mem.get() + off, len);
    return 0;
}

}  // namespace

void Dm::Free::operator()(uint8_t *p) const {
    std::free(p);
}

ibv_dm *alloc_dm(ibv_context *ctx, ibv_alloc_dm_attr *a) {
    static constexpr const char *kVerb = "ibv_alloc_dm";
    if (!ctx || !a) return fail<ibv_dm>(refuse(EINVAL, kVerb, "NULL context or attributes"));
    if (a->comp_mask) return fail<ibv_dm>(refuse(EINVAL, kVerb, "comp_mask 0x%x", a->comp_mask));
    if (a->length == 0 || a->log_align_req > 12)
        return fail<ibv_dm>(refuse(EINVAL, kVerb, "length %zu, log_align_req %u (at most 12)",
                                   a->length, a->log_align_req));
    const size_t len = (a->length + 3) & ~size_t(3);
    {
        std::lock_guard lk(g_budget_mu);
        if (len > kMaxDmSize - g_used)
            return fail<ibv_dm>(refuse(ENOMEM, kVerb, "%zu bytes: %llu of %llu are left", len,
                                       (unsigned long long)(kMaxDmSize - g_used),
                                       (unsigned long long)kMaxDmSize));
        g_used += len;
    }
    auto dm = std::make_unique<Dm>();
    const size_t align = std::max<size_t>(64, size_t(1) << a->log_align_req);
    dm->mem.reset(
        static_cast<uint8_t *>(std::aligned_alloc(align, (len + align - 1) / align * align)));
    if (!dm->mem) {
        std::lock_guard lk(g_budget_mu);
        g_used -= len;
        return fail<ibv_dm>(ENOMEM);
    }
    std::memset(dm->mem.get(), 0, len);
    dm->length = len;
    dm->context = ctx;
    dm->memcpy_to_dm = copy_to;
    dm->memcpy_from_dm = copy_from;
    Context::from(ctx)->objects().add_dm(dm.get());
    return dm.release();
}

int free_dm(ibv_dm *d) {
    if (!d) return EINVAL;
    Dm *dm = Dm::from(d);
    if (dm->mrs.load()) return refuse(EBUSY, "ibv_free_dm", "MRs are registered on it");
    {
        std::lock_guard lk(g_budget_mu);
        g_used -= dm->length;
    }
    Context::from(dm->context)->objects().remove_dm(dm);
    std::unique_ptr<Dm> owned(dm);
    return 0;
}

ibv_dm *import_dm(ibv_context *ctx, uint32_t handle) {
    if (!ctx) return fail<ibv_dm>(EINVAL);
    ibv_dm *dm = Context::from(ctx)->objects().find_dm(handle);
    if (!dm) return fail<ibv_dm>(refuse(EINVAL, "ibv_import_dm", "no DM with handle %u", handle));
    return dm;
}

// A zero-based MR over [offset, offset+length) of the device memory; its addr is NULL, as
// rdma-core reports DM MRs (addresses in it start at 0).
ibv_mr *reg_dm_mr(ibv_pd *pd, ibv_dm *d, uint64_t offset, size_t length, unsigned access) {
    static constexpr const char *kVerb = "ibv_reg_dm_mr";
    if (!pd || !d) return fail<ibv_mr>(refuse(EINVAL, kVerb, "NULL pd or dm"));
    Dm *dm = Dm::from(d);
    if (!(access & IBV_ACCESS_ZERO_BASED))
        return fail<ibv_mr>(refuse(EINVAL, kVerb, "device memory MRs are IBV_ACCESS_ZERO_BASED"));
    if (offset > dm->length || length > dm->length - offset)
        return fail<ibv_mr>(refuse(EINVAL, kVerb, "offset %llu + %zu is outside the %zu bytes",
                                   (unsigned long long)offset, length, dm->length));
    ibv_mr *mr = register_mr(pd, dm->mem.get() + offset, length, 0, access);
    if (!mr) return nullptr;
    mr->addr = nullptr;
    Mr::from(mr)->dm = dm;
    dm->mrs.fetch_add(1);
    return mr;
}

}  // namespace softrdma::verbs
