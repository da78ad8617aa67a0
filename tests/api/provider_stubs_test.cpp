// SPDX-License-Identifier: BSD-2-Clause
// The stub vendor providers answer as rdma-core's do for a device that is not theirs, so a
// program that probes them (UCX, libfabric, perftest) falls back to plain verbs.
#include <gtest/gtest.h>

#include <cerrno>

#include "api_util.h"

// rdma-core's vendor headers are not ours; the prototypes the probes use, with opaque structs.
extern "C" {
bool mlx5dv_is_supported(ibv_device *device);
ibv_context *mlx5dv_open_device(ibv_device *device, void *attr);
int mlx5dv_query_device(ibv_context *ctx, void *attr);
int efadv_query_device(ibv_context *ctx, void *attr, uint32_t inlen);
ibv_cq_ex *efadv_create_cq(ibv_context *ctx, ibv_cq_init_attr_ex *attr, void *efa_attr,
                           uint32_t inlen);
}

TEST_F(VerbsTest, VendorProvidersSayNotTheirDevice) {
    EXPECT_FALSE(mlx5dv_is_supported(ctx_->device));
    errno = 0;
    EXPECT_EQ(mlx5dv_open_device(ctx_->device, nullptr), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    char attr[256] = {};
    EXPECT_EQ(mlx5dv_query_device(ctx_, attr), EOPNOTSUPP);
    EXPECT_EQ(efadv_query_device(ctx_, attr, sizeof attr), EOPNOTSUPP);
    ibv_cq_init_attr_ex cq_attr{};
    cq_attr.cqe = 4;
    errno = 0;
    EXPECT_EQ(efadv_create_cq(ctx_, &cq_attr, attr, sizeof attr), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
}
