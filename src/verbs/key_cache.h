// SPDX-License-Identifier: BSD-2-Clause
// A QP's two most recent region keys, as the key table resolved them, kept while the table's
// epoch stays where it was then: a message's key checks (the request's list at post, the
// pieces of each segment, the receive's list, a WRITE's target) then take no lock. The table's
// lock is one cache line that every thread of the process writes at every check, and three
// checks per small message cost as much as the rest of its framing.
#pragma once
#include <array>
#include <cstdint>

#include "verbs/mr.h"

namespace softrdma::verbs {

class KeyCache {
  public:
    // mr_check, remembered. Owned by one QP, called under its lock.
    KeyCheck local(uint32_t lkey, const Pd *pd, uint64_t iova, uint64_t len, int access,
                   MemView &out) {
        return check(lkey, false, pd, 0, iova, len, access, out);
    }
    // rkey_check, remembered for region keys (a window's key is looked up every time).
    KeyCheck remote(uint32_t rkey, const Pd *pd, uint32_t qpn, uint64_t iova, uint64_t len,
                    int access, MemView &out) {
        return check(rkey, true, pd, qpn, iova, len, access, out);
    }

  private:
    KeyCheck check(uint32_t key, bool remote, const Pd *pd, uint32_t qpn, uint64_t iova,
                   uint64_t len, int access, MemView &out);
    struct Entry {
        uint64_t epoch = 0;  // the table's epochs start at 1: an empty entry never matches
        Mr mr;               // the fields the checks read (copy_checked), copied from the region
    };
    std::array<Entry, 2> e_{};
    unsigned next_ = 0;
};

}  // namespace softrdma::verbs
