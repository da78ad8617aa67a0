// SPDX-License-Identifier: BSD-2-Clause
// Shared regions (SOFTRDMA_SHM_MR=1, docs/compatibility.md §9): a region registered for remote
// access moves into its process's region file, and a same-host peer's WRITE and READ copy
// straight between the two regions. The data lands where it should, the requester counts
// the requests it did that way, a deregistered region is out of reach (the usual remote
// access error) and private again, a forked child gets its own copy of the pages, and pages
// under two registrations, or unmapped before deregistration, lose nothing and leak no access.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "process/harness.h"

using namespace sr_test;

namespace {

// The page of `p` is mapped from this process's region file.
bool in_region_file(const void *p) {
    const uint64_t a = uint64_t(uintptr_t(p));
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream in(line);
        uint64_t lo = 0, hi = 0;
        char dash = 0;
        in >> std::hex >> lo >> dash >> hi;
        if (a >= lo && a < hi) return line.find("softrdma-mr") != std::string::npos;
    }
    return false;
}

uint8_t pat(size_t i, int round) {
    return uint8_t(i * 131 + (i >> 8) + round * 17 + 1);
}

void fill(uint8_t *p, size_t off, size_t n, int round) {
    for (size_t i = 0; i < n; ++i) p[off + i] = pat(off + i, round);
}

void expect(const uint8_t *p, size_t off, size_t n, int round) {
    for (size_t i = 0; i < n; ++i) PCHECK_EQ(p[off + i], pat(off + i, round));
}

constexpr size_t kPing = 8, kPingAt = 1000000;  // the warm-up's buffer space

// Both directions carry a SEND: the connection has moved to shared memory both ways.
Endpoint &connect_and_warm_up(Endpoint &ep, Oob &oob, bool first) {
    ep.post_recv(99, kPingAt, kPing);
    ep.exchange_and_connect(oob);
    oob.barrier();  // receives posted on both sides
    for (int turn = 0; turn < 2; ++turn) {
        if ((turn == 0) == first) {
            PCHECK(ep.post(IBV_WR_SEND, 98, kPingAt + kPing, kPing) == 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        } else {
            const ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, 99u);
        }
        oob.barrier();
    }
    return ep;
}

uint64_t direct_requests(const Endpoint &ep) {
    int st = 0;
    const std::string json = run_cli("stat --json " + std::to_string(getpid()), st);
    PCHECK_EQ(st, 0);
    return qp_value(json, ep.qp->qp_num, "shm_direct");
}

// An endpoint of a process with shared regions on (set before the library reads it),
// connected, its connection on the rings both ways.
struct SharedRegionsOn {
    SharedRegionsOn() { setenv("SOFTRDMA_SHM_MR", "1", 1); }
};
struct SharedEndpoint : SharedRegionsOn, Endpoint {
    SharedEndpoint(Oob &oob, bool first) { connect_and_warm_up(*this, oob, first); }
};

// Fills our first `n` bytes with `round`'s pattern and WRITEs them to the peer's offset 4096.
void write_round(Endpoint &ep, size_t n, int round) {
    fill(ep.buf, 0, n, round);
    PCHECK(ep.post(IBV_WR_RDMA_WRITE, uint64_t(round), 0, uint32_t(n), 4096) == 0);
    PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
}

}  // namespace

TEST(SharedRegions, WriteAndReadCopyStraightBetweenRegions) {
    auto requester = [](Oob &oob) {
        SharedEndpoint ep(oob, true);
        fill(ep.buf, 0, 300000, 1);
        // Odd offsets and lengths, inside the target's whole pages.
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 64, 4096 + 5) == 0);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 2, 1000, 100000, 8192 + 3) == 0);
        for (uint64_t id = 1; id <= 2; ++id) {
            const ibv_wc wc = ep.wait_wc();
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, id);  // in order
            PCHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
        }
        oob.barrier();  // the target checks, then fills what we read
        oob.barrier();
        PCHECK(ep.post(IBV_WR_RDMA_READ, 3, 600000, 100000, 500000) == 0);
        const ibv_wc wc = ep.wait_wc();
        PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
        PCHECK_EQ(wc.byte_len, 100000u);
        for (size_t i = 0; i < 100000; ++i) PCHECK_EQ(ep.buf[600000 + i], pat(500000 + i, 2));
        PCHECK_EQ(direct_requests(ep), 3u);
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        SharedEndpoint ep(oob, false);
        PCHECK(in_region_file(ep.buf + 4096));
        oob.barrier();
        for (size_t i = 0; i < 64; ++i) PCHECK_EQ(ep.buf[4096 + 5 + i], pat(i, 1));
        for (size_t i = 0; i < 100000; ++i) PCHECK_EQ(ep.buf[8192 + 3 + i], pat(1000 + i, 1));
        PCHECK_EQ(ep.buf[4096 + 4], 0);  // nothing around them
        PCHECK_EQ(ep.buf[8192 + 3 + 100000], 0);
        fill(ep.buf, 500000, 100000, 2);
        oob.barrier();
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(requester, target));
}

// Deregistered, the region is private memory again with its data, and a WRITE to its key
// gets the remote access error, as from a NIC.
TEST(SharedRegions, DeregisteredRegionIsOutOfReach) {
    auto requester = [](Oob &oob) {
        SharedEndpoint ep(oob, true);
        write_round(ep, 8192, 3);
        PCHECK_EQ(direct_requests(ep), 1u);
        oob.barrier();  // the target deregisters
        oob.barrier();
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 2, 0, 8192, 4096) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_ACCESS_ERR);
        PCHECK_EQ(direct_requests(ep), 1u);
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        SharedEndpoint ep(oob, false);
        oob.barrier();
        PCHECK(in_region_file(ep.buf + 4096));
        PCHECK_EQ(ibv_dereg_mr(ep.mr), 0);
        ep.mr = nullptr;
        PCHECK(!in_region_file(ep.buf + 4096));
        expect(ep.buf + 4096, 0, 8192, 3);  // moved back with its data
        oob.barrier();
        oob.barrier();  // the requester has its error
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(requester, target));
}

// fork() gives the child private copies of the region's pages (as a kernel copies pinned
// pages at fork): its writes stay its own, and the parent's region stays shared.
TEST(SharedRegions, ForkedChildGetsItsOwnCopy) {
    auto requester = [](Oob &oob) {
        SharedEndpoint ep(oob, true);
        write_round(ep, 16384, 4);
        oob.barrier();  // the target forks
        oob.barrier();
        write_round(ep, 16384, 5);
        PCHECK_EQ(direct_requests(ep), 2u);
        oob.barrier();
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        SharedEndpoint ep(oob, false);
        oob.barrier();
        const pid_t child = fork();
        PCHECK(child >= 0);
        if (child == 0) {
            // The child checks its copy and scribbles on it.
            if (in_region_file(ep.buf + 4096)) _exit(2);
            for (size_t i = 0; i < 16384; ++i)
                if (ep.buf[4096 + i] != pat(i, 4)) _exit(3);
            std::memset(ep.buf + 4096, 0xee, 16384);
            _exit(0);
        }
        int st = 0;
        PCHECK_EQ(waitpid(child, &st, 0), child);
        PCHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        PCHECK(in_region_file(ep.buf + 4096));
        for (size_t i = 0; i < 16384; ++i) PCHECK_EQ(ep.buf[4096 + i], pat(i, 4));
        oob.barrier();
        oob.barrier();  // the second WRITE landed in the parent's region
        for (size_t i = 0; i < 16384; ++i) PCHECK_EQ(ep.buf[4096 + i], pat(i, 5));
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(requester, target));
}

namespace {

// WRITEs `round`'s pattern from our first `n` bytes to `addr` under `rkey`; the status.
ibv_wc_status write_to(Endpoint &ep, uint64_t addr, uint32_t rkey, size_t n, int round) {
    fill(ep.buf, 0, n, round);
    const Wire saved = ep.peer;
    ep.peer.addr = addr;
    ep.peer.rkey = rkey;
    PCHECK(ep.post(IBV_WR_RDMA_WRITE, uint64_t(round), 0, uint32_t(n)) == 0);
    ep.peer = saved;
    return ep.wait_wc().status;
}

}  // namespace

// A second registration over a shared region's pages is not published (two sets of rights
// over one page), so WRITEs under its key take the rings; deregistering the first leaves the
// pages where the second still needs them. No byte is lost on the way.
TEST(SharedRegions, OverlappingRegistrationKeepsItsPages) {
    auto requester = [](Oob &oob) {
        SharedEndpoint ep(oob, true);
        const uint32_t key2 = oob.get<uint32_t>();
        const uint64_t at = ep.peer.addr + 4096;
        PCHECK_EQ(write_to(ep, at, ep.peer.rkey, 8192, 6), IBV_WC_SUCCESS);
        PCHECK_EQ(direct_requests(ep), 1u);
        PCHECK_EQ(write_to(ep, at, key2, 8192, 7), IBV_WC_SUCCESS);
        PCHECK_EQ(direct_requests(ep), 1u);  // on the rings
        oob.barrier();                       // the target checks and deregisters the first
        oob.barrier();
        PCHECK_EQ(write_to(ep, at, key2, 8192, 8), IBV_WC_SUCCESS);
        PCHECK_EQ(write_to(ep, at, ep.peer.rkey, 8192, 9), IBV_WC_REM_ACCESS_ERR);
        PCHECK_EQ(direct_requests(ep), 1u);
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        SharedEndpoint ep(oob, false);
        ibv_mr *mr2 = ibv_reg_mr(ep.pd, ep.buf + 4096, 8192,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        PCHECK(mr2 != nullptr);
        oob.put(mr2->rkey);
        oob.barrier();
        expect(ep.buf + 4096, 0, 8192, 7);
        PCHECK_EQ(ibv_dereg_mr(ep.mr), 0);
        ep.mr = nullptr;
        expect(ep.buf + 4096, 0, 8192, 7);
        oob.barrier();
        oob.barrier();  // the requester's WRITE under the second key, and its error
        expect(ep.buf + 4096, 0, 8192, 8);
        PCHECK_EQ(ibv_dereg_mr(mr2), 0);
        expect(ep.buf + 4096, 0, 8192, 8);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(requester, target));
}

// An application that unmaps a shared region before deregistering it gets a clean
// deregistration, the peer's next WRITE the remote access error, and new memory at those
// addresses its own (not the file's old pages).
TEST(SharedRegions, RegionUnmappedBeforeDeregistration) {
    constexpr size_t kLen = 65536;
    auto requester = [](Oob &oob) {
        SharedEndpoint ep(oob, true);
        const uint64_t addr = oob.get<uint64_t>();
        const uint32_t key = oob.get<uint32_t>();
        PCHECK_EQ(write_to(ep, addr + 100, key, 30000, 10), IBV_WC_SUCCESS);
        PCHECK_EQ(direct_requests(ep), 1u);
        oob.barrier();  // the target unmaps, deregisters, maps again
        oob.barrier();
        PCHECK_EQ(write_to(ep, addr + 100, key, 30000, 11), IBV_WC_REM_ACCESS_ERR);
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        SharedEndpoint ep(oob, false);
        void *p = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        PCHECK(p != MAP_FAILED);
        auto *region = static_cast<uint8_t *>(p);
        ibv_mr *mr =
            ibv_reg_mr(ep.pd, region, kLen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        PCHECK(mr != nullptr);
        PCHECK(in_region_file(region));
        oob.put(uint64_t(uintptr_t(region)));
        oob.put(mr->rkey);
        oob.barrier();
        expect(region + 100, 0, 30000, 10);
        PCHECK_EQ(munmap(region, kLen), 0);
        PCHECK_EQ(ibv_dereg_mr(mr), 0);
        // The same addresses again, fresh: zero, private, and not reachable by the peer.
        p = mmap(region, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                 0);
        PCHECK(p == region);
        PCHECK(!in_region_file(region));
        for (size_t i = 0; i < kLen; ++i) PCHECK_EQ(region[i], 0);
        oob.barrier();
        oob.barrier();  // the requester has its error
        for (size_t i = 0; i < kLen; ++i) PCHECK_EQ(region[i], 0);
        PCHECK_EQ(munmap(region, kLen), 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(requester, target));
}

namespace {

// CPU time (ns) the library's background thread has had so far, from its schedstat.
uint64_t engine_cpu_ns() {
    const std::string task = engine_task();
    PCHECK(!task.empty());
    std::ifstream st(task + "/schedstat");
    uint64_t ns = 0;
    st >> ns;
    PCHECK(st);
    return ns;
}

}  // namespace

// A thread that holds its QP's lock nearly all the time (it posts WRITEs that go straight into
// the peer's region, each a copy under the lock) must not keep the background thread turning
// on that QP, each turn finding the lock taken: on the one CPU the two share, that took half
// of it (and of the WRITEs); ib_write_bw 64 KiB with shared regions, pinned, lost 40-50%.
TEST(SharedRegions, PosterHoldingTheLockDoesNotKeepTheEngineTurning) {
    constexpr uint32_t kLen = 64 * 1024;
    constexpr int kSends = 5;
    auto requester = [](Oob &oob) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        PCHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // the engine thread inherits it
        SharedEndpoint ep(oob, true);
        for (int i = 0; i < kSends; ++i) ep.post_recv(100 + i, kPingAt, kPing);
        fill(ep.buf, 0, kLen, 3);
        oob.barrier();  // the target SENDs every 60 ms into the stream: the engine takes them
        // Unsignalled WRITEs, 32 to a post (each completes at post), never polling, for
        // 400 ms; the engine's time is measured over the last 300.
        ibv_sge sge{uint64_t(uintptr_t(ep.buf)), kLen, ep.mr->lkey};
        ibv_send_wr wr[32]{};
        for (int i = 0; i < 32; ++i) {
            wr[i].sg_list = &sge;
            wr[i].num_sge = 1;
            wr[i].opcode = IBV_WR_RDMA_WRITE;
            wr[i].wr.rdma.remote_addr = ep.peer.addr + 4096;
            wr[i].wr.rdma.rkey = ep.peer.rkey;
            wr[i].next = i < 31 ? &wr[i + 1] : nullptr;
        }
        uint64_t posts = 0, engine_at = 0;
        bool measuring = false;
        const uint64_t start = now_ms();
        while (now_ms() - start < 400) {
            if (!measuring && now_ms() - start >= 100) {
                measuring = true;
                engine_at = engine_cpu_ns();
            }
            ibv_send_wr *bad = nullptr;
            PCHECK_EQ(ibv_post_send(ep.qp, wr, &bad), 0);
            posts += 32;
        }
        const uint64_t engine_ns = engine_cpu_ns() - engine_at;
        PCHECK(measuring);
        PCHECK_EQ(direct_requests(ep), posts);  // every one went straight
        // Fixed: none. Before: about 150 ms of the 300.
        PCHECK(engine_ns < 30'000'000);
        for (int i = 0; i < kSends; ++i) {
            const ibv_wc wc = ep.wait_wc();  // the target's SENDs
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            PCHECK_EQ(wc.wr_id, 100u + i);
        }
        oob.barrier();
        return 0;
    };
    auto target = [](Oob &oob) {
        SharedEndpoint ep(oob, false);
        oob.barrier();
        for (int i = 0; i < kSends; ++i) {
            usleep(i ? 60'000 : 50'000);
            PCHECK_EQ(ep.post(IBV_WR_SEND, 1, 0, kPing), 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        }
        oob.barrier();
        for (size_t i = 0; i < kLen; ++i) PCHECK_EQ(ep.buf[4096 + i], pat(i, 3));
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(requester, target));
}
