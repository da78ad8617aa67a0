// SPDX-License-Identifier: BSD-2-Clause
// The memory-region key table: key assignment, stale keys, and the checks every incoming
// WRITE/READ/atomic goes through (key, PD, access, bounds) before memory is touched.
#include <gtest/gtest.h>

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <shared_mutex>
#include <set>
#include <vector>

#include "verbs/key_cache.h"
#include "verbs/key_table.h"
#include "verbs/mr.h"
#include "verbs/pd.h"

namespace softrdma::verbs {
namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | kRemoteAccessMask;

// Registers on construction, deregisters on destruction, like ibv_reg_mr/ibv_dereg_mr do.
class Region {
  public:
    Region(Pd *pd, uint8_t *host, uint64_t iova, size_t len, int access) {
        mr_.owner = pd;
        mr_.pd = pd;
        mr_.access = access;
        mr_.iova = iova;
        mr_.host = host;
        mr_.addr = host;
        mr_.length = len;
        ok_ = mr_table_add(&mr_);
    }
    ~Region() {
        if (ok_ && registered_) mr_table_remove(&mr_);
    }
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;

    void deregister() {
        mr_table_remove(&mr_);
        registered_ = false;
    }
    bool added() const { return ok_; }
    uint32_t key() const { return mr_.lkey; }
    Mr &mr() { return mr_; }

  private:
    Mr mr_{};
    bool ok_ = false;
    bool registered_ = true;
};

class MrTable : public ::testing::Test {
  protected:
    Pd pd_{nullptr};
    Pd other_pd_{nullptr};
    std::vector<uint8_t> buf_ = std::vector<uint8_t>(4096);
    uint8_t *base() { return buf_.data(); }
    // A non-zero-based region: iova equals the host address, as ibv_reg_mr does.
    uint64_t va() { return uint64_t(reinterpret_cast<uintptr_t>(base())); }
};

KeyCheck check(uint32_t key, const Pd *pd, uint64_t iova, uint64_t len, int access,
               uint8_t **host = nullptr) {
    MemView v{nullptr};
    const KeyCheck k = mr_check(key, pd, iova, len, access, v);
    if (host) *host = v.host;
    return k;
}

// ---------------------------------------------------------------------------------- keys

TEST_F(MrTable, AddAssignsLkeyEqualToRkey) {
    Region r(&pd_, base(), va(), 4096, kAllAccess);
    ASSERT_TRUE(r.added());
    EXPECT_EQ(r.mr().lkey, r.mr().rkey);
    EXPECT_EQ(check(r.key(), &pd_, va(), 4096, 0), KeyCheck::kOk);
}

TEST_F(MrTable, KeysDifferBetweenLiveRegistrations) {
    std::vector<std::unique_ptr<Region>> regions;
    std::set<uint32_t> keys;
    for (int i = 0; i < 64; ++i) {
        regions.push_back(std::make_unique<Region>(&pd_, base(), va(), 4096, kAllAccess));
        ASSERT_TRUE(regions.back()->added());
        keys.insert(regions.back()->key());
    }
    EXPECT_EQ(keys.size(), 64u);
    // Each key resolves to its own region and nothing else.
    for (auto &r : regions) EXPECT_EQ(check(r->key(), &pd_, va(), 1, 0), KeyCheck::kOk);
}

TEST_F(MrTable, ReRegistrationGetsANewKey) {
    uint32_t first;
    {
        Region a(&pd_, base(), va(), 4096, kAllAccess);
        first = a.key();
    }
    Region b(&pd_, base(), va(), 4096, kAllAccess);
    EXPECT_NE(b.key(), first);
}

TEST_F(MrTable, RemovedKeyNoLongerMatches) {
    Region a(&pd_, base(), va(), 4096, kAllAccess);
    const uint32_t stale = a.key();
    a.deregister();
    EXPECT_EQ(check(stale, &pd_, va(), 16, IBV_ACCESS_REMOTE_WRITE), KeyCheck::kBadKey);
}

TEST_F(MrTable, RemovedKeyDoesNotMatchWhenSlotIsReused) {
    Region a(&pd_, base(), va(), 4096, kAllAccess);
    const uint32_t stale = a.key();
    a.deregister();
    // The next registration reuses the freed slot (same index, high 24 bits) ...
    Region b(&pd_, base(), va(), 4096, kAllAccess);
    ASSERT_TRUE(b.added());
    EXPECT_EQ(b.key() >> 8, stale >> 8);
    // ... but the old key must not reach the new region, even with identical PD and bounds.
    EXPECT_NE(b.key(), stale);
    EXPECT_EQ(check(stale, &pd_, va(), 16, IBV_ACCESS_REMOTE_WRITE), KeyCheck::kBadKey);
    EXPECT_EQ(check(b.key(), &pd_, va(), 16, IBV_ACCESS_REMOTE_WRITE), KeyCheck::kOk);
}

TEST_F(MrTable, RemoveOfAnUnregisteredMrIsHarmless) {
    Region a(&pd_, base(), va(), 4096, kAllAccess);
    Mr ghost{};
    ghost.lkey = a.key();  // same slot, but a different object
    mr_table_remove(&ghost);
    EXPECT_EQ(check(a.key(), &pd_, va(), 1, 0), KeyCheck::kOk);
}

// ---------------------------------------------------------------------------------- mr_check

TEST_F(MrTable, BadKey) {
    Region a(&pd_, base(), va(), 4096, kAllAccess);
    EXPECT_EQ(check(a.key() ^ 0x1, &pd_, va(), 1, 0), KeyCheck::kBadKey);  // wrong variant
    EXPECT_EQ(check(0xFFFFFF00u | (a.key() & 0xFF), &pd_, va(), 1, 0), KeyCheck::kBadKey);
    EXPECT_EQ(check(0xFFFFFFFFu, &pd_, va(), 1, 0), KeyCheck::kBadKey);
}

TEST_F(MrTable, WrongPd) {
    Region a(&pd_, base(), va(), 4096, kAllAccess);
    EXPECT_EQ(check(a.key(), &other_pd_, va(), 1, 0), KeyCheck::kBadPd);
    EXPECT_EQ(check(a.key(), nullptr, va(), 1, 0), KeyCheck::kBadPd);
}

TEST_F(MrTable, MissingAccess) {
    Region ro(&pd_, base(), va(), 4096, IBV_ACCESS_REMOTE_READ);
    EXPECT_EQ(check(ro.key(), &pd_, va(), 8, IBV_ACCESS_REMOTE_READ), KeyCheck::kOk);
    EXPECT_EQ(check(ro.key(), &pd_, va(), 8, IBV_ACCESS_REMOTE_WRITE), KeyCheck::kAccess);
    EXPECT_EQ(check(ro.key(), &pd_, va(), 8, IBV_ACCESS_REMOTE_ATOMIC), KeyCheck::kAccess);
    EXPECT_EQ(check(ro.key(), &pd_, va(), 8, IBV_ACCESS_LOCAL_WRITE), KeyCheck::kAccess);
    // All requested bits are required, not any one of them.
    EXPECT_EQ(check(ro.key(), &pd_, va(), 8, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE),
              KeyCheck::kAccess);
    // Access 0 means local read, which every region allows.
    EXPECT_EQ(check(ro.key(), &pd_, va(), 8, 0), KeyCheck::kOk);

    Region rw(&pd_, base(), va(), 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    EXPECT_EQ(check(rw.key(), &pd_, va(), 8, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE),
              KeyCheck::kOk);
    EXPECT_EQ(check(rw.key(), &pd_, va(), 8, IBV_ACCESS_REMOTE_READ), KeyCheck::kAccess);
}

TEST_F(MrTable, Bounds) {
    // A 100-byte window in the middle of the buffer.
    const uint64_t start = va() + 1000;
    Region a(&pd_, base() + 1000, start, 100, kAllAccess);
    const int w = IBV_ACCESS_REMOTE_WRITE;
    EXPECT_EQ(check(a.key(), &pd_, start, 100, w), KeyCheck::kOk);        // exactly the region
    EXPECT_EQ(check(a.key(), &pd_, start + 99, 1, w), KeyCheck::kOk);     // last byte
    EXPECT_EQ(check(a.key(), &pd_, start - 1, 1, w), KeyCheck::kBounds);  // starts before
    EXPECT_EQ(check(a.key(), &pd_, start - 1, 101, w), KeyCheck::kBounds);
    EXPECT_EQ(check(a.key(), &pd_, start, 101, w), KeyCheck::kBounds);  // ends after
    EXPECT_EQ(check(a.key(), &pd_, start + 100, 1, w), KeyCheck::kBounds);
    EXPECT_EQ(check(a.key(), &pd_, start + 50, 51, w), KeyCheck::kBounds);
    EXPECT_EQ(check(a.key(), &pd_, 0, 1, w), KeyCheck::kBounds);
}

TEST_F(MrTable, BoundsLengthOverflow) {
    const uint64_t start = va() + 1000;
    Region a(&pd_, base() + 1000, start, 100, kAllAccess);
    const int r = IBV_ACCESS_REMOTE_READ;
    // iova + len wraps around 2^64 and would land "inside" with a naive end check.
    EXPECT_EQ(check(a.key(), &pd_, start + 10, UINT64_MAX, r), KeyCheck::kBounds);
    EXPECT_EQ(check(a.key(), &pd_, start + 10, UINT64_MAX - 5, r), KeyCheck::kBounds);
    EXPECT_EQ(check(a.key(), &pd_, UINT64_MAX, 2, r), KeyCheck::kBounds);
    EXPECT_EQ(check(a.key(), &pd_, UINT64_MAX - 1, UINT64_MAX, r), KeyCheck::kBounds);
    EXPECT_EQ(check(a.key(), &pd_, start, UINT64_MAX, r), KeyCheck::kBounds);
}

TEST_F(MrTable, RegionEndingAtTopOfAddressSpace) {
    // iova + length == 2^64: the last byte is addressable, one more is not.
    const uint64_t top = UINT64_MAX - 99;  // 100 bytes: [top, 2^64)
    Region a(&pd_, base(), top, 100, kAllAccess);
    uint8_t *host = nullptr;
    EXPECT_EQ(check(a.key(), &pd_, UINT64_MAX, 1, 0, &host), KeyCheck::kOk);
    EXPECT_EQ(host, base() + 99);
    EXPECT_EQ(check(a.key(), &pd_, top, 100, 0), KeyCheck::kOk);
    EXPECT_EQ(check(a.key(), &pd_, UINT64_MAX, 2, 0), KeyCheck::kBounds);
}

TEST_F(MrTable, ZeroBasedIova) {
    // IBV_ACCESS_ZERO_BASED: offsets from 0 instead of virtual addresses.
    Region z(&pd_, base() + 64, 0, 256, kAllAccess | IBV_ACCESS_ZERO_BASED);
    uint8_t *host = nullptr;
    ASSERT_EQ(check(z.key(), &pd_, 0, 256, IBV_ACCESS_REMOTE_WRITE, &host), KeyCheck::kOk);
    EXPECT_EQ(host, base() + 64);
    ASSERT_EQ(check(z.key(), &pd_, 200, 56, IBV_ACCESS_REMOTE_READ, &host), KeyCheck::kOk);
    EXPECT_EQ(host, base() + 264);
    EXPECT_EQ(check(z.key(), &pd_, 200, 57, IBV_ACCESS_REMOTE_READ), KeyCheck::kBounds);
    // The virtual address of the memory is not a valid offset of a zero-based region.
    EXPECT_EQ(check(z.key(), &pd_, va() + 64, 1, 0), KeyCheck::kBounds);
}

TEST_F(MrTable, HostPointerArithmetic) {
    // iova deliberately unrelated to the host address.
    const uint64_t iova = 0x7000'0000'1000ull;
    Region a(&pd_, base() + 128, iova, 1024, kAllAccess);
    for (uint64_t off : {0ull, 1ull, 7ull, 512ull, 1023ull}) {
        uint8_t *host = nullptr;
        ASSERT_EQ(check(a.key(), &pd_, iova + off, 1, IBV_ACCESS_REMOTE_READ, &host),
                  KeyCheck::kOk);
        EXPECT_EQ(host, base() + 128 + off) << off;
    }
}

TEST_F(MrTable, CheckOrderKeyThenPdThenAccessThenBounds) {
    // With several things wrong, the first failing check names the error (and the TERMINATE
    // code chosen from it).
    Region a(&pd_, base(), va(), 16, IBV_ACCESS_REMOTE_READ);
    EXPECT_EQ(check(a.key(), &other_pd_, va() + 100, 1, IBV_ACCESS_REMOTE_WRITE), KeyCheck::kBadPd);
    EXPECT_EQ(check(a.key(), &pd_, va() + 100, 1, IBV_ACCESS_REMOTE_WRITE), KeyCheck::kAccess);
    EXPECT_EQ(check(a.key(), &pd_, va() + 100, 1, IBV_ACCESS_REMOTE_READ), KeyCheck::kBounds);
}

// mr.h: "Zero-length accesses need only a valid key." (As in IBA, a zero-length RDMA
// operation does not validate PD, access rights or address.)
TEST_F(MrTable, ZeroLengthNeedsOnlyAValidKey) {
    Region a(&pd_, base(), va(), 16, IBV_ACCESS_REMOTE_READ);
    EXPECT_EQ(check(a.key(), &pd_, va() + 16, 0, IBV_ACCESS_REMOTE_READ), KeyCheck::kOk);
    EXPECT_EQ(check(a.key(), &pd_, va() + 4096, 0, IBV_ACCESS_REMOTE_READ), KeyCheck::kOk);
    EXPECT_EQ(check(a.key(), &pd_, 0, 0, IBV_ACCESS_REMOTE_WRITE), KeyCheck::kOk);
    EXPECT_EQ(check(a.key(), &other_pd_, va(), 0, IBV_ACCESS_REMOTE_READ), KeyCheck::kOk);
    EXPECT_EQ(check(a.key() ^ 1, &pd_, va(), 0, 0), KeyCheck::kBadKey);
}

// ------------------------------------------------------------- remembered checks (KeyCache)

// A QP remembers the regions its checks resolved; every answer must stay the table's answer
// after each kind of change, as if it had looked again.
TEST_F(MrTable, RememberedCheckFollowsEveryChange) {
    KeyCache cache;
    MemView v{nullptr};
    Region r(&pd_, base(), va(), 4096, kAllAccess);
    ASSERT_TRUE(r.added());
    ASSERT_EQ(cache.local(r.key(), &pd_, va() + 8, 8, IBV_ACCESS_LOCAL_WRITE, v), KeyCheck::kOk);
    EXPECT_EQ(v.host, base() + 8);
    ASSERT_EQ(cache.remote(r.key(), &pd_, 0, va(), 64, IBV_ACCESS_REMOTE_WRITE, v), KeyCheck::kOk);

    // Rights taken away (ibv_rereg_mr with IBV_REREG_MR_CHANGE_ACCESS).
    MrChange no_write;
    no_write.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
    mr_table_change(&r.mr(), no_write);
    EXPECT_EQ(cache.remote(r.key(), &pd_, 0, va(), 64, IBV_ACCESS_REMOTE_WRITE, v),
              KeyCheck::kAccess);
    EXPECT_EQ(cache.remote(r.key(), &pd_, 0, va(), 64, IBV_ACCESS_REMOTE_READ, v), KeyCheck::kOk);

    // Moved to another PD.
    MrChange pd_move;
    pd_move.pd = &other_pd_;
    mr_table_change(&r.mr(), pd_move);
    EXPECT_EQ(cache.local(r.key(), &pd_, va(), 8, 0, v), KeyCheck::kBadPd);
    EXPECT_EQ(cache.local(r.key(), &other_pd_, va(), 8, 0, v), KeyCheck::kOk);

    // Moved to other memory, shorter: the old range is out of bounds, the new one resolves.
    std::vector<uint8_t> other(1024);
    MrChange moved;
    moved.host = other.data();
    moved.length = other.size();
    mr_table_change(&r.mr(), moved);
    EXPECT_EQ(cache.local(r.key(), &other_pd_, va(), 8, 0, v), KeyCheck::kBounds);
    const uint64_t nva = uint64_t(reinterpret_cast<uintptr_t>(other.data()));
    ASSERT_EQ(cache.local(r.key(), &other_pd_, nva + 16, 8, 0, v), KeyCheck::kOk);
    EXPECT_EQ(v.host, other.data() + 16);

    // Gone, and its slot taken by a new registration: the old key is no key at all.
    const uint32_t old = r.key();
    r.deregister();
    EXPECT_EQ(cache.local(old, &other_pd_, nva, 8, 0, v), KeyCheck::kBadKey);
    EXPECT_EQ(cache.remote(old, &other_pd_, 0, nva, 8, IBV_ACCESS_REMOTE_READ, v),
              KeyCheck::kBadKey);
    Region again(&pd_, base(), va(), 4096, kAllAccess);
    ASSERT_TRUE(again.added());
    EXPECT_EQ(cache.local(old, &pd_, va(), 8, 0, v), KeyCheck::kBadKey);
    EXPECT_EQ(cache.local(again.key(), &pd_, va(), 8, 0, v), KeyCheck::kOk);
}

// Three regions through a cache of two: each answer is still right when its entry was evicted.
TEST_F(MrTable, RememberedChecksOfManyRegionsStayRight) {
    KeyCache cache;
    std::vector<uint8_t> b1(256), b2(256), b3(256);
    auto va_of = [](std::vector<uint8_t> &b) {
        return uint64_t(reinterpret_cast<uintptr_t>(b.data()));
    };
    Region r1(&pd_, b1.data(), va_of(b1), b1.size(), kAllAccess);
    Region r2(&pd_, b2.data(), va_of(b2), b2.size(), IBV_ACCESS_LOCAL_WRITE);
    Region r3(&other_pd_, b3.data(), va_of(b3), b3.size(), kAllAccess);
    MemView v{nullptr};
    for (int round = 0; round < 3; ++round) {
        ASSERT_EQ(cache.local(r1.key(), &pd_, va_of(b1) + 1, 4, 0, v), KeyCheck::kOk);
        EXPECT_EQ(v.host, b1.data() + 1);
        EXPECT_EQ(cache.remote(r2.key(), &pd_, 0, va_of(b2), 4, IBV_ACCESS_REMOTE_WRITE, v),
                  KeyCheck::kAccess);
        ASSERT_EQ(cache.local(r2.key(), &pd_, va_of(b2) + 2, 4, 0, v), KeyCheck::kOk);
        EXPECT_EQ(v.host, b2.data() + 2);
        EXPECT_EQ(cache.local(r3.key(), &pd_, va_of(b3), 4, 0, v), KeyCheck::kBadPd);
        EXPECT_EQ(cache.local(r3.key(), &other_pd_, va_of(b3), 257, 0, v), KeyCheck::kBounds);
        EXPECT_EQ(cache.local(r1.key() ^ 0x100, &pd_, va_of(b1), 4, 0, v), KeyCheck::kBadKey);
    }
}

// The point of remembering: a check of a known region takes no lock. It completes while
// another thread holds the table's lock exclusively (without changing anything).
TEST_F(MrTable, RememberedCheckTakesNoLock) {
    KeyCache cache;
    MemView v{nullptr};
    Region r(&pd_, base(), va(), 4096, kAllAccess);
    ASSERT_EQ(cache.local(r.key(), &pd_, va(), 8, 0, v), KeyCheck::kOk);
    std::unique_lock held(key_table().mu);
    auto done = std::async(std::launch::async, [&] {
        MemView w{nullptr};
        return cache.local(r.key(), &pd_, va() + 4, 4, 0, w);
    });
    const bool finished = done.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    held.unlock();  // let a blocked check finish either way
    EXPECT_TRUE(finished);
    EXPECT_EQ(done.get(), KeyCheck::kOk);
}

}  // namespace
}  // namespace softrdma::verbs
