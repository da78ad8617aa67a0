// SPDX-License-Identifier: BSD-2-Clause
#include "preload/fd_table.h"

#include <fcntl.h>

#include <array>
#include <atomic>

namespace softrdma::preload {
namespace {

// Indexed by descriptor: +1 so that zero, the initial value, means "none".
std::array<std::atomic<int>, kMaxFds> g_rs_of{};
// Indexed by rsocket descriptor: how many placeholders stand for it.
std::array<std::atomic<int>, kMaxFds> g_refs{};

bool in_range(int fd) {
    return fd >= 0 && fd < kMaxFds;
}

}  // namespace

int rsocket_of(int fd) {
    if (!in_range(fd)) return -1;
    return g_rs_of[size_t(fd)].load(std::memory_order_acquire) - 1;
}

void map_fd(int fd, int rs) {
    if (!in_range(fd) || !in_range(rs)) return;
    g_refs[size_t(rs)].fetch_add(1, std::memory_order_relaxed);
    g_rs_of[size_t(fd)].store(rs + 1, std::memory_order_release);
}

void alias_fd(int fd, int rs) {
    map_fd(fd, rs);
}

int unmap_fd(int fd) {
    if (!in_range(fd)) return -1;
    const int rs = g_rs_of[size_t(fd)].exchange(0, std::memory_order_acq_rel) - 1;
    if (rs < 0) return -1;
    return g_refs[size_t(rs)].fetch_sub(1, std::memory_order_acq_rel) == 1 ? rs : -1;
}

int make_placeholder(bool cloexec) {
    return ::open("/dev/null", O_RDONLY | (cloexec ? O_CLOEXEC : 0));
}

}  // namespace softrdma::preload
