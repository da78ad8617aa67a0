// SPDX-License-Identifier: BSD-2-Clause
// Exported device, context and port entry points of libibverbs.so.1.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/log.h"
#include "verbs/context.h"
#include "verbs/device.h"
#include "verbs/verbs_ops.h"

#undef ibv_query_port

using namespace softrdma::verbs;
using softrdma::refuse;

extern "C" {

ibv_device **ibv_get_device_list(int *num_devices) {
    const auto devs = scan_devices();
    // One allocation the caller returns with ibv_free_device_list (libc allocator: C ABI).
    auto **list = static_cast<ibv_device **>(calloc(devs.size() + 1, sizeof(ibv_device *)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    for (size_t i = 0; i < devs.size(); ++i) list[i] = devs[i];
    if (num_devices) *num_devices = int(devs.size());
    if (devs.empty()) errno = ENODEV;
    return list;
}

void ibv_free_device_list(ibv_device **list) {
    free(list);
}

const char *ibv_get_device_name(ibv_device *dev) {
    return dev ? dev->name : nullptr;
}

__be64 ibv_get_device_guid(ibv_device *dev) {
    return dev ? htobe64(Device::from(dev)->guid_host()) : 0;
}

int ibv_get_device_index(ibv_device *dev) {
    return dev ? Device::from(dev)->ifindex() : -1;
}

ibv_context *ibv_open_device(ibv_device *dev) {
    return open_device(dev);
}

int ibv_close_device(ibv_context *ctx) {
    return close_device(ctx);
}

ibv_context *ibv_import_device(int cmd_fd) {
    return import_device(cmd_fd);
}

int ibv_query_device(ibv_context *ctx, ibv_device_attr *attr) {
    return query_device(ctx, attr);
}

int ibv_query_port(ibv_context *ctx, uint8_t port, _compat_ibv_port_attr *attr) {
    // Old binaries pass the 48-byte pre-v1.x struct; the fields we fill all live there too.
    return query_port(ctx, port, reinterpret_cast<ibv_port_attr *>(attr),
                      offsetof(ibv_port_attr, link_layer) + 1);
}

int ibv_query_gid(ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid) {
    ibv_gid_entry e;
    if (!gid || index < 0 || query_gid_entry(ctx, port, uint32_t(index), &e) != 0) {
        errno = refuse(EINVAL, "ibv_query_gid", "port %u index %d: no such GID", port, index);
        return -1;
    }
    *gid = e.gid;
    return 0;
}

int _ibv_query_gid_ex(ibv_context *ctx, uint32_t port, uint32_t index, ibv_gid_entry *entry,
                      uint32_t flags, size_t entry_size) {
    if (flags || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
    return query_gid_entry(ctx, port, index, entry);
}

ssize_t _ibv_query_gid_table(ibv_context *ctx, ibv_gid_entry *entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
    if (!ctx || flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    size_t n = 0;
    for (uint32_t i = 0;; ++i) {
        ibv_gid_entry e;
        if (query_gid_entry(ctx, 1, i, &e) != 0) break;
        if (n == max_entries) return -EINVAL;
        entries[n++] = e;
    }
    return ssize_t(n);
}

// Not in the public header (rdma-core keeps it private), but ibv_devinfo imports it.
int ibv_query_gid_type(ibv_context *ctx, uint8_t port, unsigned index, int *type) {
    ibv_gid_entry e;
    if (!type || query_gid_entry(ctx, port, index, &e) != 0) {
        errno = EINVAL;
        return -1;
    }
    *type = 1;  // enum ibv_gid_type_sysfs: 0 = IB/RoCE v1, 1 = RoCE v2
    return 0;
}

int ibv_query_pkey(ibv_context *ctx, uint8_t port, int index, __be16 *pkey) {
    if (!ctx || !pkey || port != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htobe16(0xffff);
    return 0;
}

int ibv_get_pkey_index(ibv_context *ctx, uint8_t port, __be16 pkey) {
    if (!ctx || port != 1 || (be16toh(pkey) & 0x7fff) != 0x7fff) return -EINVAL;
    return 0;
}

int ibv_get_async_event(ibv_context *ctx, ibv_async_event *ev) {
    if (!ctx || !ev) {
        errno = EINVAL;
        return -1;
    }
    return Context::from(ctx)->get_async(ev);
}

void ibv_ack_async_event(ibv_async_event *) {}

// Fork support: we pin nothing, so fork is always safe.
int ibv_fork_init(void) {
    return 0;
}
enum ibv_fork_status ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}
int ibv_dontfork_range(void *, size_t) {
    return 0;
}
int ibv_dofork_range(void *, size_t) {
    return 0;
}

}  // extern "C"
