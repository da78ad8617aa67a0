// SPDX-License-Identifier: BSD-2-Clause
// Interface and address changes (rtnetlink) turned into CM events: an id whose address goes
// away gets ADDR_CHANGE, an id whose interface (device) disappears gets DEVICE_REMOVAL.
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <mutex>

#include "cm/cm_id.h"
#include "transport/progress_engine.h"
#include "verbs/context.h"
#include "verbs/device.h"

namespace softrdma::cm {

void for_each_id(const std::function<void(CmId &)> &fn);

namespace {

class NetlinkWatcher : public transport::Pollable,
                       public std::enable_shared_from_this<NetlinkWatcher> {
  public:
    bool open() {
        fd_.reset(::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE));
        if (!fd_) return false;
        sockaddr_nl a{};
        a.nl_family = AF_NETLINK;
        a.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
        if (::bind(fd_.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) return false;
        return transport::ProgressEngine::get().watch(fd_.get(), shared_from_this(), EPOLLIN);
    }
    void on_io(uint32_t) override {
        alignas(nlmsghdr) char buf[16384];
        for (;;) {
            ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
            if (n <= 0) return;
            size_t left = size_t(n);
            for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, left);
                 h = NLMSG_NEXT(h, left))
                handle(h);
        }
    }

  private:
    void handle(nlmsghdr *h) {
        if (h->nlmsg_type == RTM_DELADDR) {
            auto *ifa = static_cast<ifaddrmsg *>(NLMSG_DATA(h));
            uint8_t gid[16] = {};
            bool have = false;
            int len = int(IFA_PAYLOAD(h));
            for (auto *rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
                if (rta->rta_type != IFA_LOCAL && rta->rta_type != IFA_ADDRESS) continue;
                if (ifa->ifa_family == AF_INET && RTA_PAYLOAD(rta) == 4) {
                    gid[10] = gid[11] = 0xff;
                    std::memcpy(gid + 12, RTA_DATA(rta), 4);
                    have = true;
                } else if (ifa->ifa_family == AF_INET6 && RTA_PAYLOAD(rta) == 16) {
                    std::memcpy(gid, RTA_DATA(rta), 16);
                    have = true;
                }
            }
            verbs::scan_devices();  // the GID tables follow the addresses
            if (!have) return;
            for_each_id([&](CmId &id) {
                if (id.state == State::kIdle || id.state == State::kDestroying) return;
                if (std::memcmp(id.route.addr.addr.ibaddr.sgid.raw, gid, 16) != 0) return;
                id.post_event(RDMA_CM_EVENT_ADDR_CHANGE, 0);
            });
        } else if (h->nlmsg_type == RTM_DELLINK) {
            auto *ifi = static_cast<ifinfomsg *>(NLMSG_DATA(h));
            verbs::scan_devices();
            for_each_id([&](CmId &id) {
                if (!id.verbs || id.state == State::kDestroying ||
                    id.state == State::kDeviceRemoval)
                    return;
                auto *dev = verbs::Context::from(id.verbs)->dev();
                if (dev->ifindex() != ifi->ifi_index) return;
                id.set_state(State::kDeviceRemoval);
                id.post_event(RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
            });
        } else if (h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_NEWLINK) {
            verbs::scan_devices();
        }
    }
    UniqueFd fd_;
};

}  // namespace

// Started with the first id: one watcher per process.
void start_netlink_watcher() {
    static std::once_flag once;
    std::call_once(once, [] {
        auto w = std::make_shared<NetlinkWatcher>();
        if (w->open()) {
            static auto *keep = std::make_unique<std::shared_ptr<NetlinkWatcher>>(w).release();
            (void)keep;
        }
    });
}

}  // namespace softrdma::cm
