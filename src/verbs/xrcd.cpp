// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/xrcd.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <unordered_map>

#include "common/log.h"
#include "verbs/srq.h"

namespace softrdma::verbs {
namespace {

struct Registry {
    std::mutex mu;
    std::map<std::pair<dev_t, ino_t>, Xrcd *> by_inode;
    std::unordered_map<uint32_t, Srq *> srqs;
    uint32_t next_srqn = 1;
};

Registry &registry() {
    static Registry *r = std::make_unique<Registry>().release();  // lookups may run at exit
    return *r;
}

}  // namespace

// The kernel's rules (ib_uverbs_open_xrcd): an fd names the domain by inode; a domain that
// does not exist yet needs O_CREAT, one that does refuses O_EXCL.
ibv_xrcd *open_xrcd(ibv_context *ctx, ibv_xrcd_init_attr *a) {
    static constexpr const char *kVerb = "ibv_open_xrcd";
    if (!ctx || !a) return fail<ibv_xrcd>(refuse(EINVAL, kVerb, "NULL context or attributes"));
    if (a->comp_mask & ~uint32_t(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS))
        return fail<ibv_xrcd>(
            refuse(EINVAL, kVerb, "comp_mask 0x%x has unknown bits", a->comp_mask));
    if (!(a->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
        return fail<ibv_xrcd>(refuse(EINVAL, kVerb, "comp_mask needs FD and OFLAGS"));
    if (a->oflags & ~(O_CREAT | O_EXCL))
        return fail<ibv_xrcd>(
            refuse(EINVAL, kVerb, "oflags 0x%x: only O_CREAT and O_EXCL", a->oflags));
    Registry &r = registry();
    if (a->fd == -1) {
        auto x = std::make_unique<Xrcd>();
        x->context = ctx;
        x->opens = 1;
        return x.release();
    }
    struct stat st;
    if (fstat(a->fd, &st) != 0)
        return fail<ibv_xrcd>(refuse(EBADF, kVerb, "fd %d is not open", a->fd));
    std::lock_guard lk(r.mu);
    auto it = r.by_inode.find({st.st_dev, st.st_ino});
    if (it != r.by_inode.end()) {
        if (a->oflags & O_EXCL)
            return fail<ibv_xrcd>(refuse(EINVAL, kVerb, "the domain exists and O_EXCL is set"));
        ++it->second->opens;
        return it->second;
    }
    if (!(a->oflags & O_CREAT))
        return fail<ibv_xrcd>(refuse(EINVAL, kVerb, "no domain for this file and no O_CREAT"));
    auto x = std::make_unique<Xrcd>();
    x->context = ctx;
    x->dev = st.st_dev;
    x->ino = st.st_ino;
    x->named = true;
    x->opens = 1;
    r.by_inode[{st.st_dev, st.st_ino}] = x.get();
    return x.release();
}

int close_xrcd(ibv_xrcd *xrcd) {
    if (!xrcd) return EINVAL;
    Xrcd *x = Xrcd::from(xrcd);
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    if (x->opens == 1 && x->users.load())
        return refuse(EBUSY, "ibv_close_xrcd", "SRQs or QPs still use the domain");
    if (--x->opens > 0) return 0;
    if (x->named) r.by_inode.erase({x->dev, x->ino});
    std::unique_ptr<Xrcd> owned(x);
    return 0;
}

uint32_t xrc_srq_register(Srq *srq) {
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    uint32_t n;
    do {
        n = r.next_srqn++ & 0xffffff;  // 24 bits, as on the wire of IB
    } while (n == 0 || r.srqs.count(n));
    r.srqs[n] = srq;
    return n;
}

bool xrc_srq_retire(Srq *srq) {
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    if (srq->busy()) return false;
    r.srqs.erase(srq->srqn());
    return true;
}

Srq *xrc_srq_acquire(uint32_t srqn, const Xrcd *xrcd) {
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    auto it = r.srqs.find(srqn);
    if (it == r.srqs.end() || it->second->xrcd() != xrcd) return nullptr;
    it->second->add_user();
    return it->second;
}

}  // namespace softrdma::verbs
