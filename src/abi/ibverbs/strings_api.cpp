// SPDX-License-Identifier: BSD-2-Clause
// Exported helpers that need no device: enum names, rate conversions, sysfs reads, and the
// kernel-struct converters librdmacm binaries expect.
#include <infiniband/verbs.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "verbs/sysfs_view.h"

extern "C" {

const char *ibv_node_type_str(enum ibv_node_type t) {
    switch (t) {
        case IBV_NODE_CA:
            return "InfiniBand channel adapter";
        case IBV_NODE_SWITCH:
            return "InfiniBand switch";
        case IBV_NODE_ROUTER:
            return "InfiniBand router";
        case IBV_NODE_RNIC:
            return "iWARP NIC";
        case IBV_NODE_USNIC:
            return "usNIC";
        case IBV_NODE_USNIC_UDP:
            return "usNIC UDP";
        case IBV_NODE_UNSPECIFIED:
            return "unspecified";
        default:
            return "unknown";
    }
}

const char *ibv_port_state_str(enum ibv_port_state s) {
    static const char *const kNames[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                         "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
    return unsigned(s) < sizeof kNames / sizeof *kNames ? kNames[s] : "unknown";
}

const char *ibv_event_type_str(enum ibv_event_type e) {
    static const char *const kNames[] = {"CQ error",
                                         "local work queue catastrophic error",
                                         "invalid request local work queue error",
                                         "local access violation work queue error",
                                         "communication established",
                                         "send queue drained",
                                         "path migrated",
                                         "path migration request error",
                                         "local catastrophic error",
                                         "port active",
                                         "port error",
                                         "LID change",
                                         "P_Key change",
                                         "SM change",
                                         "SRQ catastrophic error",
                                         "SRQ limit reached",
                                         "last WQE reached",
                                         "client reregistration",
                                         "GID table change",
                                         "WQ fatal"};
    return unsigned(e) < sizeof kNames / sizeof *kNames ? kNames[e] : "unknown";
}

const char *ibv_wc_status_str(enum ibv_wc_status s) {
    static const char *const kNames[] = {"success",
                                         "local length error",
                                         "local QP operation error",
                                         "local EE context operation error",
                                         "local protection error",
                                         "Work Request Flushed Error",
                                         "memory management operation error",
                                         "bad response error",
                                         "local access error",
                                         "remote invalid request error",
                                         "remote access error",
                                         "remote operation error",
                                         "transport retry counter exceeded",
                                         "RNR retry counter exceeded",
                                         "local RDD violation error",
                                         "remote invalid RD request",
                                         "aborted error",
                                         "invalid EE context number",
                                         "invalid EE context state",
                                         "fatal error",
                                         "response timeout error",
                                         "general error",
                                         "TM error",
                                         "TM rendezvous incomplete"};
    return unsigned(s) < sizeof kNames / sizeof *kNames ? kNames[s] : "unknown";
}

// Rate enum <-> multiples of 2.5 Gb/s and Mb/s, per the IB rate table.
namespace {
struct RateRow {
    enum ibv_rate rate;
    int mult;
    int mbps;
};
constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 5, 14062},
    {IBV_RATE_56_GBPS, 22, 56250},    {IBV_RATE_112_GBPS, 45, 112500},
    {IBV_RATE_168_GBPS, 67, 168750},  {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
};
}  // namespace

int ibv_rate_to_mult(enum ibv_rate rate) {
    for (const auto &r : kRates)
        if (r.rate == rate) return r.mult;
    return -1;
}
enum ibv_rate mult_to_ibv_rate(int mult) {
    for (const auto &r : kRates)
        if (r.mult == mult) return r.rate;
    return IBV_RATE_MAX;
}
int ibv_rate_to_mbps(enum ibv_rate rate) {
    for (const auto &r : kRates)
        if (r.rate == rate) return r.mbps;
    return -1;
}
enum ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const auto &r : kRates)
        if (r.mbps == mbps) return r.rate;
    return IBV_RATE_MAX;
}

const char *ibv_get_sysfs_path(void) {
    return "/sys";
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size) {
    char path[512];
    std::snprintf(path, sizeof path, "%s/%s", dir, file);
    ssize_t n;
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = ::read(fd, buf, size);
        ::close(fd);
    } else if (auto ours = softrdma::verbs::sysfs_view_file(path)) {
        // Our devices have no kernel sysfs outside `softrdma run`: answer as it would.
        n = ssize_t(std::min(size, ours->size()));
        std::memcpy(buf, ours->data(), size_t(n));
    } else {
        return -1;
    }
    if (n <= 0) return -1;
    if (size_t(n) < size) buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    return int(n);
}

int ibv_read_ibdev_sysfs_file(char *buf, size_t size, const char *fmt, ...) {
    (void)buf;
    (void)size;
    (void)fmt;
    errno = ENOENT;
    return -1;
}

// The ib_uverbs kernel structs only reach these from Debian's librdmacm, which is never
// combined with our libibverbs; they exist so that combination fails loudly, not at load.
void ibv_copy_qp_attr_from_kern(void *, void *) {}
void ibv_copy_ah_attr_from_kern(void *, void *) {}
void ibv_copy_path_rec_from_kern(void *, void *) {}
void ibv_copy_path_rec_to_kern(void *, void *) {}

}  // extern "C"
