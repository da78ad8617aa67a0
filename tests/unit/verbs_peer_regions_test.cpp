// SPDX-License-Identifier: BSD-2-Clause
// A peer's region file is input from another process: every entry is checked as the
// responder checks a request (key, PD, rights of the region and of the QP, bounds, the range
// in the file), a file that is not a sealed region file of that process is refused, and no
// copy leaves the published range.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/unique_fd.h"
#include "verbs/peer_regions.h"
#include "verbs/region_file.h"

using namespace softrdma;
using namespace softrdma::verbs;

namespace {

constexpr uint64_t kPd = 0x1234;
constexpr uint32_t kKey = (7u << 8) | 3;  // slot 7
constexpr uint64_t kIova = 0x10000;       // the region: 3 pages from here, 2 of them in the file

// A region file as a peer would make it, with one published region.
struct FakePeer {
    FakePeer() {
        fd.reset(memfd_create("fake-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING));
        EXPECT_TRUE(fd);
        EXPECT_EQ(ftruncate(fd.get(), off_t(kRegionDataOff + 8192)), 0);
        EXPECT_EQ(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
        map = static_cast<uint8_t *>(
            mmap(nullptr, kRegionDataOff + 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
        EXPECT_NE(map, MAP_FAILED);
        auto *h = reinterpret_cast<RegionFileHeader *>(map);
        h->magic = kRegionMagic;
        h->pid = uint32_t(getpid());
        h->entries = kRegionEntries;
        RegionEntry *e = entry();
        e->key = kKey;
        e->access = IBV_ACCESS_REMOTE_WRITE;
        e->pd = kPd;
        e->iova = kIova;
        e->len = 3 * 4096;
        e->page_iova = kIova + 4096;  // the first page was partial: not in the file
        e->page_len = 8192;
        e->file_off = kRegionDataOff;
        e->seq = 2;
    }
    ~FakePeer() { munmap(map, kRegionDataOff + 8192); }
    RegionEntry *entry() const {
        return reinterpret_cast<RegionEntry *>(map + kRegionTableOff) + (kKey >> 8);
    }
    uint8_t *data() const { return map + kRegionDataOff; }
    UniqueFd fd;
    uint8_t *map = nullptr;
};

bool put(PeerRegions &p, PeerRegions::Responder r, uint32_t key, uint64_t iova, size_t n,
         uint8_t v) {
    std::vector<uint8_t> b(n, v);
    iovec io{b.data(), n};
    return p.write(r, key, iova, &io, 1, n);
}

}  // namespace

TEST(PeerRegions, ChecksEveryFieldBeforeCopying) {
    FakePeer f;
    auto p = PeerRegions::open(getpid(), f.fd.get());
    ASSERT_TRUE(p);
    const PeerRegions::Responder ok{kPd, IBV_ACCESS_REMOTE_WRITE};
    EXPECT_TRUE(put(*p, ok, kKey, kIova + 4096 + 10, 100, 0xab));
    EXPECT_EQ(f.data()[10], 0xab);
    EXPECT_EQ(f.data()[109], 0xab);
    EXPECT_EQ(f.data()[110], 0);
    EXPECT_EQ(f.data()[9], 0);
    // Each of these is refused, and nothing is written.
    EXPECT_FALSE(put(*p, ok, kKey + 1, kIova + 4096, 8, 1));                              // key
    EXPECT_FALSE(put(*p, {kPd + 1, IBV_ACCESS_REMOTE_WRITE}, kKey, kIova + 4096, 8, 1));  // PD
    EXPECT_FALSE(put(*p, {kPd, IBV_ACCESS_REMOTE_READ}, kKey, kIova + 4096, 8, 1));  // QP rights
    EXPECT_FALSE(put(*p, ok, kKey, kIova + 3 * 4096 - 4, 8, 1));  // past the region's end
    EXPECT_FALSE(put(*p, ok, kKey, kIova + 100, 8, 1));           // its partial first page
    EXPECT_FALSE(put(*p, ok, kKey, kIova - 8, 8, 1));             // before it
    uint8_t b[8];
    iovec io{b, 8};
    EXPECT_FALSE(p->read(ok, kKey, kIova + 4096, &io, 1, 8));  // the region allows no READ
    for (size_t i = 0; i < 8192; ++i) {
        if (i < 10 || i >= 110) {
            ASSERT_EQ(f.data()[i], 0) << i;
        }
    }
}

TEST(PeerRegions, ChangingOrWithdrawnEntriesAndBadOffsetsAreRefused) {
    FakePeer f;
    auto p = PeerRegions::open(getpid(), f.fd.get());
    ASSERT_TRUE(p);
    const PeerRegions::Responder ok{kPd, IBV_ACCESS_REMOTE_WRITE};
    f.entry()->seq = 3;  // odd: being changed, or withdrawn
    EXPECT_FALSE(put(*p, ok, kKey, kIova + 4096, 8, 1));
    f.entry()->seq = 4;
    f.entry()->file_off = 4096;  // inside the table
    EXPECT_FALSE(put(*p, ok, kKey, kIova + 4096, 8, 1));
    f.entry()->file_off = kRegionFileMax - 4096;  // beyond the file
    EXPECT_FALSE(put(*p, ok, kKey, kIova + 4096, 8, 1));
    f.entry()->file_off = UINT64_MAX - 100;  // wraps
    EXPECT_FALSE(put(*p, ok, kKey, kIova + 4096, 8, 1));
    f.entry()->file_off = kRegionDataOff;
    f.entry()->page_len = 1ull << 40;  // more pages than the region
    EXPECT_FALSE(put(*p, ok, kKey, kIova + 4096 + 16384, 8, 1));
    EXPECT_EQ(f.entry()->busy.load(), 0u);  // every refusal left
    EXPECT_TRUE(put(*p, ok, kKey, kIova + 4096, 8, 7));
    EXPECT_EQ(f.data()[0], 7);
}

TEST(PeerRegions, OnlyASealedRegionFileOfThatProcessIsOpened) {
    FakePeer f;
    EXPECT_FALSE(PeerRegions::open(getpid(), 1 << 20));  // no such descriptor
    reinterpret_cast<RegionFileHeader *>(f.map)->pid = uint32_t(getpid()) + 1;
    EXPECT_FALSE(PeerRegions::open(getpid(), f.fd.get()));  // names another process
    reinterpret_cast<RegionFileHeader *>(f.map)->pid = uint32_t(getpid());
    reinterpret_cast<RegionFileHeader *>(f.map)->magic = 0;
    EXPECT_FALSE(PeerRegions::open(getpid(), f.fd.get()));  // not a region file
    UniqueFd unsealed(memfd_create("fake-mr", MFD_CLOEXEC));
    ASSERT_EQ(ftruncate(unsealed.get(), off_t(kRegionDataOff)), 0);
    EXPECT_FALSE(PeerRegions::open(getpid(), unsealed.get()));  // could shrink under us
}
