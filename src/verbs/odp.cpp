// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/odp.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/log.h"
#include "verbs/mr.h"
#include "verbs/pd.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

namespace softrdma::verbs {
namespace {

uintptr_t page_size() {
    static const uintptr_t p = uintptr_t(sysconf(_SC_PAGESIZE));
    return p;
}

constexpr uint32_t kRcOdp = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                            IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
                            IBV_ODP_SUPPORT_SRQ_RECV;

}  // namespace

bool range_mapped(uintptr_t addr, size_t len) {
    if (len == 0) return true;
    const uintptr_t page = page_size();
    if (addr + len < addr) return false;
    uintptr_t start = addr & ~(page - 1);
    const uintptr_t end = (addr + len + page - 1) & ~(page - 1);
    // mincore() fails with ENOMEM on any unmapped page; its vector is scratch.
    unsigned char vec[256];
    while (start < end) {
        const size_t pages = std::min<size_t>((end - start) / page, sizeof vec);
        if (mincore(reinterpret_cast<void *>(start), pages * page, vec) != 0) return false;
        start += pages * page;
    }
    return true;
}

ibv_odp_caps odp_caps() {
    ibv_odp_caps c{};
    c.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
    c.per_transport_caps.rc_odp_caps = kRcOdp;
    c.per_transport_caps.uc_odp_caps =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE;
    c.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
    return c;
}

uint32_t xrc_odp_caps() {
    return kRcOdp;
}

int advise_mr(ibv_pd *pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge *sg,
              uint32_t num_sge) {
    static constexpr const char *kVerb = "ibv_advise_mr";
    if (!pd) return refuse(EINVAL, kVerb, "NULL pd");
    if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH && advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
        advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
        return refuse(EOPNOTSUPP, kVerb, "advice %d is not a prefetch", int(advice));
    if (flags & ~uint32_t(IBV_ADVISE_MR_FLAG_FLUSH))
        return refuse(EOPNOTSUPP, kVerb, "flags 0x%x: only IBV_ADVISE_MR_FLAG_FLUSH exists", flags);
    if (num_sge == 0 || !sg) return refuse(EINVAL, kVerb, "no scatter/gather entries");
    for (uint32_t i = 0; i < num_sge; ++i) {
        MemView v;
        const KeyCheck kc =
            mr_check(sg[i].lkey, Pd::from(pd), sg[i].addr, sg[i].length,
                     advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE ? IBV_ACCESS_LOCAL_WRITE : 0, v);
        if (kc != KeyCheck::kOk)
            return refuse(EINVAL, kVerb, "sge %u: lkey 0x%x does not cover %#llx + %u on this PD",
                          i, sg[i].lkey, (unsigned long long)sg[i].addr, sg[i].length);
        // Another process's region (imported) has its pages there, not here.
        if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT || !sg[i].length || v.foreign)
            continue;
        // Prefetch faults the pages in now; without FLUSH a failure is only advice lost.
        const uintptr_t start = uintptr_t(v.host) & ~(page_size() - 1);
        const size_t len = uintptr_t(v.host) + sg[i].length - start;
        const int how = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE ? MADV_POPULATE_WRITE
                                                                      : MADV_POPULATE_READ;
        if (madvise(reinterpret_cast<void *>(start), len, how) != 0 && errno != EINVAL &&
            (flags & IBV_ADVISE_MR_FLAG_FLUSH))
            return refuse(EFAULT, kVerb, "sge %u: %#llx + %u cannot be faulted in", i,
                          (unsigned long long)sg[i].addr, sg[i].length);
    }
    return 0;
}

}  // namespace softrdma::verbs
