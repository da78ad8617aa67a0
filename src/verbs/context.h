// SPDX-License-Identifier: BSD-2-Clause
// An opened device: the extended verbs_context (so the header inlines reach every slot),
// the ops table of the data path, and the async event queue.
#pragma once
#include <infiniband/verbs.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include "common/unique_fd.h"
#include "verbs/device.h"
#include "verbs/shared_objects.h"

namespace softrdma::verbs {

class Context : public verbs_context {
  public:
    explicit Context(Device *dev);
    // ibv_import_device: a context on `objects` whose command fd is `cmd_fd` (owned now).
    Context(Device *dev, int cmd_fd, std::shared_ptr<SharedObjects> objects);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    ibv_context *ibv() { return &context; }
    Device *dev() const { return dev_; }
    static Context *from(ibv_context *c) {
        return static_cast<Context *>(reinterpret_cast<verbs_context *>(
            reinterpret_cast<char *>(c) - offsetof(verbs_context, context)));
    }

    // The objects any context on this command fd shares (ibv_import_pd / ibv_import_mr).
    SharedObjects &objects() { return *objects_; }

    // Async events (ibv_get_async_event): queued here, signalled through async_fd.
    void post_async(const ibv_async_event &ev);
    int get_async(ibv_async_event *ev);

  private:
    void init();
    Device *dev_;
    UniqueFd async_fd_;
    UniqueFd cmd_fd_;
    std::shared_ptr<SharedObjects> objects_;
    std::mutex mu_;
    std::deque<ibv_async_event> async_;
};

void fill_device_attr(const Device &dev, ibv_device_attr &a);
void fill_port_attr(const Device &dev, ibv_port_attr &a);

// Device-wide limits.
constexpr int kMaxQpWr = 16384;
// Multicast limits reported as rxe does; a QP's IPv4 groups are further capped by the
// kernel's per-socket limit (net.ipv4.igmp_max_memberships, 20 by default).
constexpr int kMaxMcastGroups = 8192;
constexpr int kMaxMcastQpAttach = 56;
constexpr int kMaxSge = 32;
constexpr int kMaxCqe = 4 * 1024 * 1024;
constexpr int kMaxRdAtomic = 16;
constexpr int kMaxInline = 1024;
constexpr int kMaxSrqWr = 16384;
constexpr uint32_t kMaxRwqIndTableLog = 8;  // RSS indirection tables of up to 256 WQs
constexpr uint32_t kVendorId = 0x736f66;    // "sof": matches no vendor table in perftest
constexpr uint32_t kVendorPartId = 1;

}  // namespace softrdma::verbs
