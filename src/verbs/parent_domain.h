// SPDX-License-Identifier: BSD-2-Clause
// Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain). A parent
// domain is a PD that wraps a protection domain (everything made on it is protected by that
// PD), optionally a thread domain, and optionally the application's allocators, which then
// provide the memory of the QP, RQ, SRQ and CQ rings made on it.
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <vector>

namespace softrdma::verbs {

struct Td : ibv_td {
    std::atomic<int> users{0};  // parent domains on it
    static Td *from(ibv_td *t) { return static_cast<Td *>(t); }
};

// resource_type values our allocator calls pass (provider-specific in rdma-core, like
// mlx5dv's MLX5DV_RES_TYPE_*): our vendor id in the upper 32 bits.
enum : uint64_t {
    kResTypeQp = (uint64_t(0x736f66) << 32) + 1,  // a QP's send queue
    kResTypeRq,                                   // a QP's receive queue
    kResTypeSrq,
    kResTypeCq,
};

// Memory from a parent domain's allocator (falling back to the heap where it answers
// IBV_ALLOCATOR_USE_DEFAULT); a NULL answer is an allocation failure (std::bad_alloc, turned
// into ENOMEM by the verb that creates the object).
class DomainMemory : public std::pmr::memory_resource {
  public:
    DomainMemory(ibv_pd *parent, uint64_t type);
    ~DomainMemory() override;

  private:
    void *do_allocate(size_t bytes, size_t align) override;
    void do_deallocate(void *p, size_t bytes, size_t align) override;
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override {
        return this == &o;
    }
    ibv_pd *parent_;
    uint64_t type_;
    std::mutex mu_;
    std::vector<void *> custom_;  // what the application's allocator gave (its free takes it)
};

// The memory resource for objects of `type` made on `pd`: the application's allocators when
// `pd` is a parent domain that has them, else nullptr (the heap).
std::unique_ptr<DomainMemory> domain_memory(ibv_pd *pd, uint64_t type);
inline std::pmr::memory_resource *resource_of(const std::unique_ptr<DomainMemory> &m) {
    return m ? m.get() : std::pmr::get_default_resource();
}

ibv_td *alloc_td(ibv_context *ctx, ibv_td_init_attr *attr);
int dealloc_td(ibv_td *td);
ibv_pd *alloc_parent_domain(ibv_context *ctx, ibv_parent_domain_init_attr *attr);

}  // namespace softrdma::verbs
