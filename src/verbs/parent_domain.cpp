// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/parent_domain.h"

#include <algorithm>
#include <cerrno>
#include <new>

#include "common/log.h"
#include "verbs/pd.h"

namespace softrdma::verbs {
DomainMemory::DomainMemory(ibv_pd *parent, uint64_t type) : parent_(parent), type_(type) {}

DomainMemory::~DomainMemory() = default;

void *DomainMemory::do_allocate(size_t bytes, size_t align) {
    const Pd &pd = *static_cast<Pd *>(parent_);
    // Rings are asked for cache-line aligned (what posix_memalign-style allocators need:
    // a power of two, at least a pointer's size), as providers ask for their buffers.
    align = std::max<size_t>(align, 64);
    void *p = pd.alloc(parent_, pd.pd_context, bytes, align, type_);
    if (p == IBV_ALLOCATOR_USE_DEFAULT)
        return std::pmr::get_default_resource()->allocate(bytes, align);
    if (!p) throw std::bad_alloc();
    std::lock_guard lk(mu_);
    custom_.push_back(p);
    return p;
}

void DomainMemory::do_deallocate(void *p, size_t bytes, size_t align) {
    bool custom = false;
    {
        std::lock_guard lk(mu_);
        auto it = std::find(custom_.begin(), custom_.end(), p);
        if (it != custom_.end()) {
            custom_.erase(it);
            custom = true;
        }
    }
    if (custom) {  // the application's free runs with no lock of ours held
        const Pd &pd = *static_cast<Pd *>(parent_);
        pd.free(parent_, pd.pd_context, p, type_);
        return;
    }
    std::pmr::get_default_resource()->deallocate(p, bytes, std::max<size_t>(align, 64));
}

std::unique_ptr<DomainMemory> domain_memory(ibv_pd *pd, uint64_t type) {
    const Pd *p = static_cast<Pd *>(pd);
    if (!p || !p->protection || !p->alloc) return nullptr;
    return std::make_unique<DomainMemory>(pd, type);
}

ibv_td *alloc_td(ibv_context *ctx, ibv_td_init_attr *a) {
    if (!ctx || !a) return fail<ibv_td>(refuse(EINVAL, "ibv_alloc_td", "NULL context or attr"));
    if (a->comp_mask)
        return fail<ibv_td>(refuse(EINVAL, "ibv_alloc_td", "comp_mask 0x%x", a->comp_mask));
    auto td = std::make_unique<Td>();
    td->context = ctx;
    return td.release();
}

int dealloc_td(ibv_td *t) {
    if (!t) return EINVAL;
    if (Td::from(t)->users.load())
        return refuse(EBUSY, "ibv_dealloc_td", "parent domains still use it");
    std::unique_ptr<Td> owned(Td::from(t));
    return 0;
}

// As mlx5: the protection domain is required; allocators come as a pair.
ibv_pd *alloc_parent_domain(ibv_context *ctx, ibv_parent_domain_init_attr *a) {
    static constexpr const char *kVerb = "ibv_alloc_parent_domain";
    if (!ctx || !a || !a->pd)
        return fail<ibv_pd>(refuse(EINVAL, kVerb, "a parent domain needs a protection domain"));
    constexpr uint32_t kKnown =
        IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    if (a->comp_mask & ~kKnown)
        return fail<ibv_pd>(refuse(EINVAL, kVerb, "comp_mask 0x%x has unknown bits", a->comp_mask));
    Pd *protection = Pd::from(a->pd);
    if (protection->protection)
        return fail<ibv_pd>(refuse(EINVAL, kVerb, "the PD is itself a parent domain"));
    const bool allocators = a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
    if (allocators && (!a->alloc || !a->free))
        return fail<ibv_pd>(refuse(EINVAL, kVerb, "allocators come as a pair: alloc and free"));
    auto pd = std::make_unique<Pd>(ctx);
    pd->protection = protection;
    pd->handle = protection->handle;
    pd->td = a->td ? Td::from(a->td) : nullptr;
    if (allocators) {
        pd->alloc = a->alloc;
        pd->free = a->free;
    }
    if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) pd->pd_context = a->pd_context;
    protection->users.fetch_add(1);
    if (pd->td) pd->td->users.fetch_add(1);
    return pd.release();
}

}  // namespace softrdma::verbs
