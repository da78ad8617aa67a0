// SPDX-License-Identifier: BSD-2-Clause
// Device discovery and queries through the drop-in libibverbs.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>

// rdma-core declares these in <infiniband/driver.h>, a provider header we do not ship.
extern "C" {
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
}

namespace {

struct Dev {
    ibv_device **list = nullptr;
    int n = 0;
    ibv_context *ctx = nullptr;
    Dev() {
        list = ibv_get_device_list(&n);
        for (int i = 0; list && i < n; ++i)
            if (std::string(ibv_get_device_name(list[i])) == "sr_lo")
                ctx = ibv_open_device(list[i]);
    }
    ~Dev() {
        if (ctx) ibv_close_device(ctx);
        if (list) ibv_free_device_list(list);
    }
};

}  // namespace

TEST(Devices, OnePerInterfaceLoopbackLast) {
    Dev d;
    ASSERT_NE(d.list, nullptr);
    ASSERT_GE(d.n, 1);
    EXPECT_EQ(d.list[d.n], nullptr);  // NULL-terminated
    EXPECT_STREQ(ibv_get_device_name(d.list[d.n - 1]), "sr_lo");
    for (int i = 0; i < d.n; ++i) {
        EXPECT_EQ(std::string(ibv_get_device_name(d.list[i])).rfind("sr_", 0), 0u);
        EXPECT_EQ(d.list[i]->transport_type, IBV_TRANSPORT_IB);
        EXPECT_EQ(d.list[i]->node_type, IBV_NODE_CA);
        EXPECT_NE(ibv_get_device_guid(d.list[i]), 0u);
    }
}

TEST(Devices, PortLooksLikeRoce) {
    Dev d;
    ASSERT_NE(d.ctx, nullptr);
    ibv_port_attr pa;
    ASSERT_EQ(ibv_query_port(d.ctx, 1, &pa), 0);
    EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
    EXPECT_EQ(pa.lid, 0);
    EXPECT_EQ(pa.active_mtu, IBV_MTU_4096);
    EXPECT_EQ(pa.max_mtu, IBV_MTU_4096);
    EXPECT_GE(pa.gid_tbl_len, 1);
    EXPECT_EQ(ibv_query_port(d.ctx, 2, &pa), EINVAL);
    EXPECT_EQ(ibv_query_port(d.ctx, 0, &pa), EINVAL);
}

TEST(Devices, GidTableFromAddresses) {
    Dev d;
    ASSERT_NE(d.ctx, nullptr);
    ibv_gid gid;
    ASSERT_EQ(ibv_query_gid(d.ctx, 1, 0, &gid), 0);
    const uint8_t mapped_lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    EXPECT_EQ(std::memcmp(gid.raw, mapped_lo, 16), 0);
    ibv_gid_entry e;
    ASSERT_EQ(ibv_query_gid_ex(d.ctx, 1, 0, &e, 0), 0);
    EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
    EXPECT_EQ(e.port_num, 1u);
    EXPECT_EQ(std::memcmp(e.gid.raw, mapped_lo, 16), 0);
    ibv_port_attr pa;
    ASSERT_EQ(ibv_query_port(d.ctx, 1, &pa), 0);
    EXPECT_EQ(ibv_query_gid(d.ctx, 1, pa.gid_tbl_len, &gid), -1);
    EXPECT_NE(ibv_query_gid_ex(d.ctx, 1, uint32_t(pa.gid_tbl_len), &e, 0), 0);
    ibv_gid_entry table[64];
    const ssize_t n = ibv_query_gid_table(d.ctx, table, 64, 0);
    EXPECT_EQ(n, pa.gid_tbl_len);
    __be16 pkey;
    ASSERT_EQ(ibv_query_pkey(d.ctx, 1, 0, &pkey), 0);
    EXPECT_EQ(pkey, htobe16(0xffff));
    EXPECT_EQ(ibv_query_pkey(d.ctx, 1, 1, &pkey), -1);
}

TEST(Devices, DeviceAttributes) {
    Dev d;
    ASSERT_NE(d.ctx, nullptr);
    ibv_device_attr a;
    ASSERT_EQ(ibv_query_device(d.ctx, &a), 0);
    EXPECT_EQ(a.phys_port_cnt, 1);
    EXPECT_GE(a.max_qp_wr, 1024);
    EXPECT_GE(a.max_sge, 16);
    EXPECT_GE(a.max_qp_rd_atom, 1);
    EXPECT_NE(a.vendor_id, 0x02c9u);  // never mistaken for Mellanox
    EXPECT_NE(a.vendor_id, 0x1d0fu);  // or EFA
    ibv_device_attr_ex ax;
    ASSERT_EQ(ibv_query_device_ex(d.ctx, nullptr, &ax), 0);
    EXPECT_EQ(ax.orig_attr.max_qp_wr, a.max_qp_wr);
    ibv_query_device_ex_input in{};
    in.comp_mask = 1;
    EXPECT_EQ(ibv_query_device_ex(d.ctx, &in, &ax), EINVAL);
}

TEST(Devices, ExtendedContextSlots) {
    Dev d;
    ASSERT_NE(d.ctx, nullptr);
    // The header inlines find the extended slots only through these markers.
    EXPECT_EQ(d.ctx->abi_compat, __VERBS_ABI_IS_EXTENDED);
    verbs_context *v = verbs_get_ctx(d.ctx);
    ASSERT_NE(v, nullptr);
    EXPECT_GE(v->sz, sizeof(verbs_context));
    EXPECT_NE(v->query_port, nullptr);
    EXPECT_NE(v->create_qp_ex, nullptr);
    EXPECT_NE(v->create_cq_ex, nullptr);
    EXPECT_NE(v->open_xrcd, nullptr);
    EXPECT_NE(v->open_qp, nullptr);
    EXPECT_NE(v->get_srq_num, nullptr);
    EXPECT_EQ(ibv_open_xrcd(d.ctx, nullptr), nullptr);  // offered, and checks its arguments
    EXPECT_EQ(errno, EINVAL);
}

TEST(Devices, AsyncEventFdIsNonBlockingCapable) {
    Dev d;
    ASSERT_NE(d.ctx, nullptr);
    ASSERT_GE(d.ctx->async_fd, 0);
    const int fl = fcntl(d.ctx->async_fd, F_GETFL);
    ASSERT_EQ(fcntl(d.ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
    ibv_async_event ev;
    EXPECT_EQ(ibv_get_async_event(d.ctx, &ev), -1);
    EXPECT_EQ(errno, EAGAIN);
}

// Outside `softrdma run` no kernel files exist for our devices; ibv_read_sysfs_file answers as
// the kernel's would (the files `softrdma run` writes into its view).
TEST(Devices, SysfsHelpersAnswerForOurDevices) {
    Dev d;
    ASSERT_NE(d.ctx, nullptr);
    ibv_device *dev = d.ctx->device;
    EXPECT_STREQ(ibv_get_sysfs_path(), "/sys");
    EXPECT_STREQ(dev->ibdev_path, "/sys/class/infiniband/sr_lo");
    char buf[128];
    ASSERT_GT(ibv_read_sysfs_file(dev->ibdev_path, "ports/1/gid_attrs/types/0", buf, sizeof buf),
              0);
    EXPECT_STREQ(buf, "RoCE v2");
    ASSERT_GT(ibv_read_sysfs_file(dev->ibdev_path, "ports/1/gid_attrs/ndevs/0", buf, sizeof buf),
              0);
    EXPECT_STREQ(buf, "lo");
    ASSERT_GT(ibv_read_sysfs_file(dev->ibdev_path, "ports/1/gids/0", buf, sizeof buf), 0);
    union ibv_gid gid;
    ASSERT_EQ(ibv_query_gid(d.ctx, 1, 0, &gid), 0);
    char want[64];
    std::snprintf(want, sizeof want,
                  "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                  gid.raw[0], gid.raw[1], gid.raw[2], gid.raw[3], gid.raw[4], gid.raw[5],
                  gid.raw[6], gid.raw[7], gid.raw[8], gid.raw[9], gid.raw[10], gid.raw[11],
                  gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]);
    EXPECT_STREQ(buf, want);
    ASSERT_GT(ibv_read_sysfs_file(dev->ibdev_path, "ports/1/state", buf, sizeof buf), 0);
    EXPECT_STREQ(buf, "4: ACTIVE");
    ASSERT_GT(ibv_read_sysfs_file(dev->dev_path, "ibdev", buf, sizeof buf), 0);
    EXPECT_STREQ(buf, "sr_lo");
    EXPECT_EQ(ibv_read_sysfs_file(dev->ibdev_path, "ports/2/state", buf, sizeof buf), -1);
    // A real file still comes from the file system.
    ASSERT_GT(ibv_read_sysfs_file("/proc/self", "comm", buf, sizeof buf), 0);
}
