// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/context.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <endian.h>

#include "common/stats_page.h"

namespace softrdma::verbs {

void install_context_ops(Context &c);

Context::Context(Device *dev)
    : verbs_context{}, dev_(dev), async_fd_(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC)) {
    CommandFd c = new_command_fd(dev);
    cmd_fd_.reset(c.fd);
    objects_ = std::move(c.objects);
    init();
}

Context::Context(Device *dev, int cmd_fd, std::shared_ptr<SharedObjects> objects)
    : verbs_context{},
      dev_(dev),
      async_fd_(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC)),
      cmd_fd_(cmd_fd),
      objects_(std::move(objects)) {
    init();
}

void Context::init() {
    stats::opened(stats::Resource::kContext);
    context.device = dev_;
    context.cmd_fd = cmd_fd_.get();
    context.async_fd = async_fd_.get();
    context.num_comp_vectors = 1;
    pthread_mutex_init(&context.mutex, nullptr);
    context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    sz = sizeof(verbs_context);
    install_context_ops(*this);
}

Context::~Context() {
    stats::closed(stats::Resource::kContext);
    pthread_mutex_destroy(&context.mutex);
}

void Context::post_async(const ibv_async_event &ev) {
    {
        std::lock_guard lk(mu_);
        async_.push_back(ev);
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(async_fd_.get(), &one, sizeof one);
}

int Context::get_async(ibv_async_event *ev) {
    for (;;) {
        uint64_t v;
        const ssize_t r = ::read(async_fd_.get(), &v, sizeof v);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        std::lock_guard lk(mu_);
        if (async_.empty()) continue;
        *ev = async_.front();
        async_.pop_front();
        return 0;
    }
}

void fill_device_attr(const Device &dev, ibv_device_attr &a) {
    std::memset(&a, 0, sizeof a);
    std::snprintf(a.fw_ver, sizeof a.fw_ver, "softrdma %s", SOFTRDMA_VERSION);
    a.node_guid = htobe64(dev.guid_host());
    a.sys_image_guid = htobe64(dev.guid_host());
    a.max_mr_size = ~0ull;
    a.page_size_cap = 0xfffff000;
    a.vendor_id = kVendorId;
    a.vendor_part_id = kVendorPartId;
    a.hw_ver = 1;
    a.max_qp = 1 << 20;
    a.max_qp_wr = kMaxQpWr;
    a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_CURR_QP_STATE_MOD |
                         IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_PORT_ACTIVE_EVENT |
                         IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_MEM_WINDOW |
                         IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_RAW_IP_CSUM |
                         IBV_DEVICE_MANAGED_FLOW_STEERING;
    a.max_sge = kMaxSge;
    a.max_sge_rd = kMaxSge;
    a.max_cq = 1 << 20;
    a.max_cqe = kMaxCqe;
    a.max_mr = 1 << 24;
    a.max_mw = 1 << 24;  // windows and regions share the key space
    a.max_pd = 1 << 20;
    a.max_qp_rd_atom = kMaxRdAtomic;
    a.max_ee_rd_atom = 0;
    a.max_res_rd_atom = kMaxRdAtomic * (1 << 16);
    a.max_qp_init_rd_atom = kMaxRdAtomic;
    a.max_ee_init_rd_atom = 0;
    a.atomic_cap = IBV_ATOMIC_HCA;
    a.max_ah = 1 << 20;
    a.max_mcast_grp = kMaxMcastGroups;
    a.max_mcast_qp_attach = kMaxMcastQpAttach;
    a.max_total_mcast_qp_attach = kMaxMcastGroups * kMaxMcastQpAttach;
    a.max_srq = 1 << 20;
    a.max_srq_wr = kMaxSrqWr;
    a.max_srq_sge = kMaxSge;
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 15;
    a.phys_port_cnt = 1;
}

void fill_port_attr(const Device &dev, ibv_port_attr &a) {
    std::memset(&a, 0, sizeof a);
    a.state = IBV_PORT_ACTIVE;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = IBV_MTU_4096;
    a.gid_tbl_len = int(dev.gids().size());
    a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
    a.max_msg_sz = 1u << 31;
    a.pkey_tbl_len = 1;
    a.lid = 0;
    a.sm_lid = 0;
    a.max_vl_num = 1;
    a.active_width = 2;   // 4x
    a.active_speed = 32;  // EDR: 4x EDR = 100 Gb/s
    a.phys_state = 5;     // LinkUp
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
}

}  // namespace softrdma::verbs
