// SPDX-License-Identifier: BSD-2-Clause
// On-demand paging between two processes: an implicit region reaches any mapped memory of
// the target, an access to a page that does not exist is a remote access error (the target
// lives on), and ibv_advise_mr prefetches.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "process/harness.h"

using namespace sr_test;

// The hole is a page the target unmapped; any mmap in the target (a sanitizer's allocator, a
// library thread) may take that page again before the WRITE arrives, and the WRITE then
// rightly lands. So a WRITE that succeeds is accepted as a retry only if the target finds
// the page mapped again; if the page is still a hole, the test fails.
TEST(OnDemandPaging, ImplicitRegionReachesMappedMemoryOnly) {
    constexpr int kAttempts = 3;
    auto target = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        ibv_device_attr_ex da{};
        PCHECK(ibv_query_device_ex(ep.ctx, nullptr, &da) == 0);
        PCHECK(da.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
        PCHECK((da.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_WRITE) != 0);
        ibv_mr *all =
            ibv_reg_mr(ep.pd, nullptr, SIZE_MAX,
                       IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        PCHECK(all != nullptr);
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        for (int attempt = 0;; ++attempt) {
            PCHECK(attempt < kAttempts);
            // Memory mapped after the registration is covered; a hole is not.
            auto *area = static_cast<uint8_t *>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE,
                                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
            PCHECK(area != MAP_FAILED);
            PCHECK(munmap(area + page, page) == 0);
            oob.put(all->rkey);
            oob.put(uint64_t(uintptr_t(area)));
            oob.put(uint64_t(page));
            oob.barrier();  // first write done
            for (size_t i = 0; i < 256; ++i) PCHECK_EQ(area[i], uint8_t(i ^ 0x5a));
            if (oob.get<char>() == 'e') {  // the write into the hole was refused
                PCHECK_EQ(area[2 * page], 0);
                break;
            }
            unsigned char v;
            const bool taken = mincore(area + page, page, &v) == 0;
            oob.put<char>(taken ? 'r' : 'f');
            PCHECK(taken);  // it landed in a page that does not exist
        }
        PCHECK_EQ(ibv_dereg_mr(all), 0);
        return 0;
    };
    auto initiator = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        for (int i = 0; i < 256; ++i) ep.buf[i] = uint8_t(i ^ 0x5a);
        for (int attempt = 0; attempt < kAttempts; ++attempt) {
            ep.peer.rkey = oob.get<uint32_t>();
            const uint64_t area = oob.get<uint64_t>(), page = oob.get<uint64_t>();
            ep.peer.addr = area;
            PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 256) == 0);
            PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
            oob.barrier();
            // Straddles the unmapped page: nothing lands, the QP ends in a remote access error.
            ep.peer.addr = area + page - 16;
            PCHECK(ep.post(IBV_WR_RDMA_WRITE, 2, 0, 64) == 0);
            const ibv_wc wc = ep.wait_wc();
            if (wc.status == IBV_WC_REM_ACCESS_ERR) {
                oob.put<char>('e');
                return 0;
            }
            PCHECK_EQ(wc.status, IBV_WC_SUCCESS);
            oob.put<char>('s');
            PCHECK_EQ(oob.get<char>(), 'r');  // the page had been mapped again: once more
        }
        return 1;
    };
    EXPECT_PAIR_OK(run_pair(initiator, target));
}

TEST(OnDemandPaging, AdviseMr) {
    auto solo = [](Oob &oob) {
        EpOptions o;
        o.mr_access |= IBV_ACCESS_ON_DEMAND;
        Endpoint ep(o);
        ibv_sge sg{uint64_t(uintptr_t(ep.buf)), 1 << 16, ep.mr->lkey};
        PCHECK_EQ(ibv_advise_mr(ep.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                                IBV_ADVISE_MR_FLAG_FLUSH, &sg, 1),
                  0);
        PCHECK_EQ(ibv_advise_mr(ep.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &sg, 1), 0);
        PCHECK_EQ(ibv_advise_mr(ep.pd, ibv_advise_mr_advice(7), 0, &sg, 1), EOPNOTSUPP);
        PCHECK_EQ(ibv_advise_mr(ep.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0x80, &sg, 1), EOPNOTSUPP);
        PCHECK_EQ(ibv_advise_mr(ep.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 0), EINVAL);
        ibv_sge past = sg;
        past.addr += ep.opt.buf_size;  // beyond the region
        PCHECK_EQ(ibv_advise_mr(ep.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &past, 1), EINVAL);
        ibv_sge bad_key = sg;
        bad_key.lkey ^= 0x100;
        PCHECK_EQ(ibv_advise_mr(ep.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &bad_key, 1), EINVAL);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(idle_peer, solo));
}
