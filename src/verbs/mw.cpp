// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/mw.h"

#include <mutex>
#include <shared_mutex>

#include "common/log.h"
#include "verbs/key_table.h"
#include "verbs/pd.h"

namespace softrdma::verbs {
namespace {

void unbind(Mw &mw) {
    if (mw.mr) --mw.mr->windows;
    mw.mr = nullptr;
    mw.addr = mw.length = 0;
    mw.access = 0;
    mw.qpn = 0;
    mw.bound = mw.type == IBV_MW_TYPE_1;  // a type 1 window stays valid, with no memory
}

// The bind rules of IBA 10.6.7 as rxe checks them (rxe_check_bind_mw); the reason goes to
// SOFTRDMA_DEBUG since the completion can only say IBV_WC_MW_BIND_ERR.
const char *bind_error(const MwBind &b, const Mw &mw, const Mr *mr, const Pd *pd) {
    if (mw.type == IBV_MW_TYPE_1 && (b.access & IBV_ACCESS_ZERO_BASED))
        return "a type 1 window cannot be zero-based";
    if (mw.type == IBV_MW_TYPE_2) {
        if (mw.bound) return "the type 2 window is bound already (invalidate it first)";
        if (Pd::from(mw.pd) != pd) return "the window belongs to another PD than the QP";
        if (!mr || b.length == 0) return "a type 2 bind needs a region and a length";
    }
    if (!mr) return nullptr;
    if (mr->owner != Pd::from(mw.pd)) return "the region belongs to another PD than the window";
    if (mr->access & IBV_ACCESS_ZERO_BASED) return "the region is zero-based";
    if (!(mr->access & IBV_ACCESS_MW_BIND)) return "the region lacks IBV_ACCESS_MW_BIND";
    if ((b.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & IBV_ACCESS_LOCAL_WRITE))
        return "remote write or atomic rights need a region with local write";
    // Zero-based or not, the window's memory lies inside the region.
    if (b.addr < mr->iova || b.length > mr->length || b.addr - mr->iova > mr->length - b.length)
        return "the window is not inside the region";
    return nullptr;
}

}  // namespace

bool mw_table_add(Mw *mw) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    const uint32_t key = t.add({nullptr, mw});
    if (!key) return false;
    mw->rkey = mw->key = key;
    mw->bound = mw->type == IBV_MW_TYPE_1;
    return true;
}

void mw_table_remove(Mw *mw) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    unbind(*mw);
    KeySlot *s = t.at(mw->key);
    if (s && s->mw == mw) t.remove(mw->key);
}

bool mw_bind(const MwBind &b, const Pd *pd, uint32_t qpn) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    // The window may have been deallocated since the bind was posted: it must still own
    // its slot before it is touched.
    KeySlot *slot = t.at(b.mw->key);
    if (!slot || slot->mw != b.mw) {
        SR_DEBUG("bind: the window is gone");
        return false;
    }
    Mw &mw = *b.mw;
    Mr *mr = nullptr;
    if (b.length) {
        KeySlot *ms = t.at(b.mr_lkey);
        if (!ms || !ms->mr || ms->mr->lkey != b.mr_lkey) {
            SR_DEBUG("bind: lkey 0x%x names no memory region", b.mr_lkey);
            return false;
        }
        mr = ms->mr;
    }
    if (const char *why = bind_error(b, mw, mr, pd)) {
        SR_DEBUG("bind of window 0x%x refused: %s", mw.key, why);
        return false;
    }
    unbind(mw);
    mw.key = (mw.key & ~0xffu) | (b.rkey & 0xffu);
    mw.bound = true;
    mw.access = b.access;
    mw.addr = b.addr;
    mw.length = b.length;
    if (mr && b.length) {
        mw.mr = mr;
        ++mr->windows;
    }
    if (mw.type == IBV_MW_TYPE_2) mw.qpn = qpn;
    return true;
}

bool mw_invalidate(uint32_t rkey, const Pd *pd) {
    KeyTable &t = key_table();
    KeyTableChange lk(t);
    KeySlot *s = t.at(rkey);
    if (!s || !s->mw || s->mw->key != rkey) return false;
    Mw &mw = *s->mw;
    if (mw.type != IBV_MW_TYPE_2 || !mw.bound || Pd::from(mw.pd) != pd) return false;
    unbind(mw);
    return true;
}

KeyCheck rkey_check(uint32_t key, const Pd *pd, uint32_t qpn, uint64_t iova, uint64_t len,
                    int access, MemView &out) {
    KeyTable &t = key_table();
    std::shared_lock lk(t.mu);
    const KeySlot *s = t.at(key);
    if (!s) return KeyCheck::kBadKey;
    if (s->mr) {
        if (s->mr->rkey != key) return KeyCheck::kBadKey;
        return mr_range(*s->mr, pd, iova, len, access, out);
    }
    if (!s->mw || s->mw->key != key || !s->mw->bound) return KeyCheck::kBadKey;
    const Mw &mw = *s->mw;
    if (mw.type == IBV_MW_TYPE_2 ? mw.qpn != qpn : Pd::from(mw.pd) != pd) return KeyCheck::kBadPd;
    if (len == 0) {
        out.host = mw.mr ? mw.mr->host : nullptr;
        return KeyCheck::kOk;
    }
    if ((mw.access & access) != access) return KeyCheck::kAccess;
    const uint64_t base = (mw.access & IBV_ACCESS_ZERO_BASED) ? 0 : mw.addr;
    if (!mw.mr || iova < base || len > mw.length || iova - base > mw.length - len)
        return KeyCheck::kBounds;
    MemView whole;  // the region's own checks, on the window's bytes
    return mr_range(*mw.mr, Pd::from(mw.pd), mw.addr + (iova - base), len, 0, whole) ==
                   KeyCheck::kOk
               ? (out = whole, KeyCheck::kOk)
               : KeyCheck::kBounds;
}

}  // namespace softrdma::verbs
