// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/shared_objects.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>

namespace softrdma::verbs {
namespace {

std::atomic<uint32_t> g_next_handle{1};

struct Key {
    dev_t dev;
    ino_t ino;
    bool operator<(const Key &o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

struct Entry {
    Device *dev;
    std::weak_ptr<SharedObjects> objects;
};

struct Registry {
    std::mutex mu;
    std::map<Key, Entry> by_inode;
};

Registry &registry() {
    static Registry *r = std::make_unique<Registry>().release();
    return *r;
}

uint32_t next_handle() {
    uint32_t h;
    do h = g_next_handle.fetch_add(1);
    while (h == 0);
    return h;
}

}  // namespace

void SharedObjects::add_pd(ibv_pd *pd) {
    pd->handle = next_handle();
    std::lock_guard lk(mu_);
    pds_[pd->handle] = pd;
}

void SharedObjects::remove_pd(const ibv_pd *pd) {
    std::lock_guard lk(mu_);
    pds_.erase(pd->handle);
}

ibv_pd *SharedObjects::find_pd(uint32_t handle) {
    std::lock_guard lk(mu_);
    auto it = pds_.find(handle);
    return it == pds_.end() ? nullptr : it->second;
}

void SharedObjects::add_mr(ibv_mr *mr) {
    mr->handle = next_handle();
    std::lock_guard lk(mu_);
    mrs_[mr->handle] = mr;
}

void SharedObjects::remove_mr(const ibv_mr *mr) {
    std::lock_guard lk(mu_);
    mrs_.erase(mr->handle);
}

ibv_mr *SharedObjects::find_mr(uint32_t handle) {
    std::lock_guard lk(mu_);
    auto it = mrs_.find(handle);
    return it == mrs_.end() ? nullptr : it->second;
}

void SharedObjects::add_dm(ibv_dm *dm) {
    dm->handle = next_handle();
    dm->comp_mask |= IBV_DM_MASK_HANDLE;
    std::lock_guard lk(mu_);
    dms_[dm->handle] = dm;
}

void SharedObjects::remove_dm(const ibv_dm *dm) {
    std::lock_guard lk(mu_);
    dms_.erase(dm->handle);
}

ibv_dm *SharedObjects::find_dm(uint32_t handle) {
    std::lock_guard lk(mu_);
    auto it = dms_.find(handle);
    return it == dms_.end() ? nullptr : it->second;
}

CommandFd new_command_fd(Device *dev) {
    CommandFd c;
    c.objects = std::make_shared<SharedObjects>();
    c.fd = memfd_create("softrdma-verbs-context", MFD_CLOEXEC);
    struct stat st;
    if (c.fd < 0 || fstat(c.fd, &st) != 0) return c;  // a context without an fd to share
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    // Drop entries whose contexts are gone (their inodes may be reused).
    for (auto it = r.by_inode.begin(); it != r.by_inode.end();)
        it = it->second.objects.expired() ? r.by_inode.erase(it) : std::next(it);
    r.by_inode[{st.st_dev, st.st_ino}] = {dev, c.objects};
    return c;
}

ImportedContext find_command_fd(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return {};
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    auto it = r.by_inode.find({st.st_dev, st.st_ino});
    if (it == r.by_inode.end()) return {};
    return {it->second.dev, it->second.objects.lock()};
}

}  // namespace softrdma::verbs
