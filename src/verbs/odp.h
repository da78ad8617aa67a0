// SPDX-License-Identifier: BSD-2-Clause
// On-demand paging. softrdma never pins: every region is "on demand" in fact, since the
// library reads and writes the application's virtual memory when an operation arrives. What
// ODP adds is the promise that memory need not be mapped at registration (an implicit region
// spans the whole address space), so accesses through an ODP region check that their pages
// exist, and fail as a hardware page fault that cannot be served does, rather than crash.
#pragma once
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace softrdma::verbs {

// True when every page of [addr, addr+len) is mapped. Allocates nothing (data path).
bool range_mapped(uintptr_t addr, size_t len);

// What query_device_ex reports.
ibv_odp_caps odp_caps();
uint32_t xrc_odp_caps();

// ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...): the implicit region.
inline bool is_implicit_odp(const void *addr, size_t length, unsigned access) {
    return !addr && length == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND);
}

// ibv_advise_mr: prefetch faults the ranges in (MADV_POPULATE_*), synchronously with
// IBV_ADVISE_MR_FLAG_FLUSH; every SGE must lie inside a region of `pd`.
int advise_mr(ibv_pd *pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge *sg,
              uint32_t num_sge);

}  // namespace softrdma::verbs
