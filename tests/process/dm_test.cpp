// SPDX-License-Identifier: BSD-2-Clause
// Device memory between two processes: a peer's RDMA WRITE lands in device memory through a
// zero-based DM MR, and comes back out through ibv_memcpy_from_dm; the copy and budget rules.
#include <gtest/gtest.h>

#include <cstring>

#include "process/harness.h"

using namespace sr_test;

TEST(DeviceMemory, PeerWritesLandInDeviceMemory) {
    auto target = [](Oob &oob) {
        Endpoint ep;
        ibv_device_attr_ex da{};
        PCHECK(ibv_query_device_ex(ep.ctx, nullptr, &da) == 0);
        PCHECK(da.max_dm_size >= 8192);
        ibv_alloc_dm_attr aa{8192, 0, 0};
        ibv_dm *dm = ibv_alloc_dm(ep.ctx, &aa);
        PCHECK(dm);
        uint8_t pattern[8192];
        for (size_t i = 0; i < sizeof pattern; ++i) pattern[i] = uint8_t(i * 11);
        PCHECK_EQ(ibv_memcpy_to_dm(dm, 0, pattern, sizeof pattern), 0);
        // 4-byte units inside the allocation only.
        PCHECK_EQ(ibv_memcpy_to_dm(dm, 2, pattern, 4), EINVAL);
        PCHECK_EQ(ibv_memcpy_to_dm(dm, 0, pattern, 6), EINVAL);
        PCHECK_EQ(ibv_memcpy_from_dm(pattern, dm, 8192 - 4, 8), EINVAL);
        errno = 0;
        PCHECK(ibv_reg_dm_mr(ep.pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE) ==
               nullptr);  // not 0-based
        PCHECK_EQ(errno, EINVAL);
        PCHECK(ibv_reg_dm_mr(ep.pd, dm, 4096, 8192, IBV_ACCESS_ZERO_BASED) == nullptr);  // too long
        ibv_mr *mr =
            ibv_reg_dm_mr(ep.pd, dm, 4096, 4096,
                          IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        PCHECK(mr && mr->addr == nullptr);
        PCHECK_EQ(ibv_free_dm(dm), EBUSY);  // an MR is registered on it
        ep.exchange_and_connect(oob);
        oob.put(mr->rkey);
        oob.barrier();  // the peer wrote 1 KiB at offset 512 of the MR
        uint8_t back[8192];
        PCHECK_EQ(ibv_memcpy_from_dm(back, dm, 0, sizeof back), 0);
        for (size_t i = 0; i < sizeof back; ++i) {
            const bool written = i >= 4096 + 512 && i < 4096 + 512 + 1024;
            PCHECK_EQ(back[i], written ? uint8_t(0x5a ^ i) : uint8_t(i * 11));
        }
        PCHECK_EQ(ibv_dereg_mr(mr), 0);
        PCHECK_EQ(ibv_free_dm(dm), 0);
        // The device's budget: more than max_dm_size at once is ENOMEM.
        ibv_alloc_dm_attr big{size_t(da.max_dm_size) + 4, 0, 0};
        errno = 0;
        PCHECK(ibv_alloc_dm(ep.ctx, &big) == nullptr);
        PCHECK_EQ(errno, ENOMEM);
        return 0;
    };
    auto writer = [](Oob &oob) {
        Endpoint ep;
        ep.exchange_and_connect(oob);
        ep.peer.rkey = oob.get<uint32_t>();
        ep.peer.addr = 0;  // zero-based
        for (size_t i = 0; i < 1024; ++i) ep.buf[i] = uint8_t(0x5a ^ (4096 + 512 + i));
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 1, 0, 1024, 512) == 0);
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_SUCCESS);
        PCHECK(ep.post(IBV_WR_RDMA_WRITE, 2, 0, 8, 4096) == 0);  // past the MR's 4 KiB
        PCHECK_EQ(ep.wait_wc().status, IBV_WC_REM_ACCESS_ERR);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(writer, target));
}
