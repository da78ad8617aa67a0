// SPDX-License-Identifier: BSD-2-Clause
#include "cli/stats_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "verbs/qp_state_table.h"

namespace softrdma::cli {

StatsView::~StatsView() {
    munmap(const_cast<uint8_t *>(base_), stats::kPageBytes);
}

const stats::QpSlot &StatsView::qp(uint32_t i) const {
    return *reinterpret_cast<const stats::QpSlot *>(base_ + stats::kQpOffset + size_t(i) * 256);
}
const stats::MrSlot &StatsView::mr(uint32_t i) const {
    return *reinterpret_cast<const stats::MrSlot *>(base_ + stats::kMrOffset + size_t(i) * 64);
}
const stats::CmSlot &StatsView::cm(uint32_t i) const {
    return *reinterpret_cast<const stats::CmSlot *>(base_ + stats::kCmOffset + size_t(i) * 128);
}

std::unique_ptr<StatsView> StatsView::open(pid_t pid, int fd_num) {
    const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd_num);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && size_t(st.st_size) == stats::kPageBytes)
        m = mmap(nullptr, stats::kPageBytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return nullptr;
    std::unique_ptr<StatsView> v(new StatsView(static_cast<const uint8_t *>(m)));
    const stats::Header &h = v->header();
    const uint64_t magic = __atomic_load_n(&h.magic, __ATOMIC_ACQUIRE);
    if (magic != stats::kMagic || h.version != stats::kVersion || h.pid != pid ||
        h.qp_offset != stats::kQpOffset || h.mr_offset != stats::kMrOffset ||
        h.cm_offset != stats::kCmOffset)
        return nullptr;
    return v;
}

std::vector<std::unique_ptr<StatsView>> find_stats(pid_t only) {
    std::vector<pid_t> pids;
    if (only) {
        pids.push_back(only);
    } else if (DIR *d = opendir("/proc")) {
        while (dirent *e = readdir(d))
            if (e->d_name[0] >= '1' && e->d_name[0] <= '9') pids.push_back(pid_t(atoi(e->d_name)));
        closedir(d);
    }
    std::sort(pids.begin(), pids.end());
    const std::string want = std::string("/memfd:") + stats::kMemfdName + " (deleted)";
    std::vector<std::unique_ptr<StatsView>> out;
    for (pid_t pid : pids) {
        const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
        DIR *d = opendir(dir.c_str());
        if (!d) continue;  // gone, or not ours to look at
        while (dirent *e = readdir(d)) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            char target[256];
            const std::string link = dir + "/" + e->d_name;
            const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
            if (n <= 0) continue;
            target[n] = 0;
            if (want != target) continue;
            if (auto v = StatsView::open(pid, atoi(e->d_name))) {
                out.push_back(std::move(v));
                break;
            }
        }
        closedir(d);
    }
    return out;
}

}  // namespace softrdma::cli

namespace softrdma::cli {

// The library's own names, for the numbers a page holds.
const char *qp_type_name(unsigned type) {
    return verbs::qp_type_name(ibv_qp_type(type));
}

const char *qp_state_name(unsigned state) {
    return verbs::qp_state_name(ibv_qp_state(state));
}

std::string json_string(const char *s) {
    std::string out = "\"";
    for (; *s; ++s) {
        const unsigned char c = static_cast<unsigned char>(*s);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            out += b;
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

}  // namespace softrdma::cli
