// SPDX-License-Identifier: BSD-2-Clause
#pragma once
#include <infiniband/verbs.h>

#include <atomic>

namespace softrdma::verbs {

class Context;
struct Td;

struct Pd : ibv_pd {
    explicit Pd(ibv_context *c) : ibv_pd{} { context = c; }
    // Objects created on this PD (MR, QP, SRQ, AH, MW, parent domains): dealloc fails with
    // EBUSY while > 0.
    std::atomic<int> users{0};

    // A parent domain (ibv_alloc_parent_domain) wraps the PD that protects what is made on
    // it; these are null on a plain PD.
    Pd *protection = nullptr;
    Td *td = nullptr;
    void *(*alloc)(ibv_pd *, void *, size_t, size_t, uint64_t) = nullptr;
    void (*free)(ibv_pd *, void *, void *, uint64_t) = nullptr;
    void *pd_context = nullptr;

    // The protection domain behind `p`: every key and ownership check compares these.
    static Pd *from(ibv_pd *p) {
        Pd *x = static_cast<Pd *>(p);
        return x && x->protection ? x->protection : x;
    }
    static const Pd *from(const ibv_pd *p) { return from(const_cast<ibv_pd *>(p)); }
    // The object `p` itself (a parent domain stays one).
    static Pd *itself(ibv_pd *p) { return static_cast<Pd *>(p); }
};

// An object made on `p` (a PD or a parent domain) holds it, and the PD behind a parent domain.
inline void pd_hold(ibv_pd *p) {
    Pd *x = Pd::itself(p);
    x->users.fetch_add(1);
    if (x->protection) x->protection->users.fetch_add(1);
}
inline void pd_release(ibv_pd *p) {
    Pd *x = Pd::itself(p);
    x->users.fetch_sub(1);
    if (x->protection) x->protection->users.fetch_sub(1);
}

}  // namespace softrdma::verbs
