// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/shared_objects.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "verbs/device.h"
#include "verbs/mr.h"
#include "verbs/pd.h"

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

// Caller holds r.mu. Drops entries whose contexts are gone (their inodes may be reused).
void remember(Registry &r, const struct stat &st, Device *dev,
              const std::shared_ptr<SharedObjects> &objects) {
    for (auto it = r.by_inode.begin(); it != r.by_inode.end();)
        it = it->second.objects.expired() ? r.by_inode.erase(it) : std::next(it);
    r.by_inode[{st.st_dev, st.st_ino}] = {dev, objects};
}

}  // namespace

SharedObjects::~SharedObjects() = default;

uint32_t SharedObjects::next_handle() {
    if (table_) return table_->next_handle();
    uint32_t h;
    do h = g_next_handle.fetch_add(1);
    while (h == 0);
    return h;
}

void SharedObjects::add_pd(ibv_pd *pd) {
    pd->handle = next_handle();
    const int slot = table_ ? table_->publish_pd(pd->handle) : -1;
    std::lock_guard lk(mu_);
    pds_[pd->handle] = {pd, slot};
}

// Drops `object` from `table` (if that handle is still it) and withdraws its publication.
void SharedObjects::withdraw(std::map<uint32_t, Published> &table, uint32_t handle,
                             const void *object) {
    int slot = -1;
    {
        std::lock_guard lk(mu_);
        auto it = table.find(handle);
        if (it == table.end() || it->second.object != object) return;
        slot = it->second.slot;
        table.erase(it);
    }
    if (table_) table_->retire(slot);
}

void *SharedObjects::lookup(std::map<uint32_t, Published> &table, uint32_t handle) {
    std::lock_guard lk(mu_);
    auto it = table.find(handle);
    return it == table.end() ? nullptr : it->second.object;
}

void SharedObjects::remove_pd(const ibv_pd *pd) {
    withdraw(pds_, pd->handle, pd);
}

ibv_pd *SharedObjects::find_pd(uint32_t handle) {
    return static_cast<ibv_pd *>(lookup(pds_, handle));
}

int SharedObjects::publish(const ibv_mr *m) {
    if (!table_) return -1;
    const Mr &mr = *static_cast<const Mr *>(m);
    ExportedObject o;
    o.handle = mr.handle;
    o.pd_handle = mr.owner ? mr.owner->handle : 0;
    o.addr = uint64_t(uintptr_t(mr.host));
    o.length = mr.length;
    o.iova = mr.iova;
    o.access = mr.access;
    o.key = mr.lkey;
    const int slot = table_->publish_mr(o);
    if (slot < 0)
        SR_DEBUG("mr %u: the context's export table is full; other processes cannot import it",
                 mr.handle);
    return slot;
}

void SharedObjects::add_mr(ibv_mr *mr) {
    mr->handle = next_handle();
    const int slot = publish(mr);
    std::lock_guard lk(mu_);
    mrs_[mr->handle] = {mr, slot};
}

void SharedObjects::remove_mr(const ibv_mr *mr) {
    withdraw(mrs_, mr->handle, mr);
}

void SharedObjects::republish_mr(ibv_mr *mr) {
    int old = -1;
    {
        std::lock_guard lk(mu_);
        auto it = mrs_.find(mr->handle);
        if (it == mrs_.end() || it->second.object != mr) return;
        old = it->second.slot;
        it->second.slot = -1;
    }
    if (!table_) return;
    table_->retire(old);
    const int slot = publish(mr);
    std::lock_guard lk(mu_);
    auto it = mrs_.find(mr->handle);
    if (it != mrs_.end()) it->second.slot = slot;
}

ibv_mr *SharedObjects::find_mr(uint32_t handle) {
    return static_cast<ibv_mr *>(lookup(mrs_, handle));
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

ibv_pd *SharedObjects::import_foreign_pd(ibv_context *ctx, uint32_t handle) {
    if (!table_) return nullptr;
    std::lock_guard lk(mu_);
    auto it = proxies_.find(handle);
    if (it == proxies_.end()) {
        if (!table_->find_pd(handle)) return nullptr;
        Proxy p;
        p.pd = std::make_unique<Pd>(ctx);
        p.pd->handle = handle;
        it = proxies_.emplace(handle, std::move(p)).first;
    }
    ++it->second.imports;
    return it->second.pd.get();
}

bool SharedObjects::unimport_foreign_pd(ibv_pd *pd) {
    std::lock_guard lk(mu_);
    auto it = proxies_.find(pd->handle);
    if (it == proxies_.end() || it->second.pd.get() != pd) return false;
    // Objects made on it keep it: it goes with the context then.
    if (--it->second.imports <= 0 && it->second.pd->users.load() == 0) proxies_.erase(it);
    return true;
}

ibv_mr *SharedObjects::import_foreign_mr(ibv_pd *pd, uint32_t handle) {
    if (!table_) return nullptr;
    ExportedObject o;
    ExportRef ref;
    if (!table_->find_mr(handle, Pd::from(pd)->handle, o, ref)) return nullptr;
    auto mr = std::make_unique<Mr>();
    mr->context = pd->context;
    mr->pd = pd;
    mr->handle = handle;
    mr->addr = reinterpret_cast<void *>(uintptr_t(o.addr));
    mr->length = size_t(o.length);
    mr->owner = Pd::from(pd);
    mr->access = o.access;
    mr->iova = o.iova;
    mr->host = reinterpret_cast<uint8_t *>(uintptr_t(o.addr));
    mr->foreign = {o.pid, table_.get(), ref};
    mr->table = table_.get();
    // The owner's key where this process has it free (as on hardware, where keys are the
    // device's), another one otherwise.
    if (!mr_table_add_as(mr.get(), o.key)) {
        errno = ENOMEM;
        return nullptr;
    }
    pd_hold(pd);
    return mr.release();
}

CommandFd new_command_fd(Device *dev) {
    CommandFd c;
    c.fd = memfd_create("softrdma-verbs-context", MFD_CLOEXEC);
    struct stat st;
    std::unique_ptr<ExportTable> table;
    if (c.fd >= 0) table = ExportTable::create(c.fd, dev->name);
    c.objects = std::make_shared<SharedObjects>(std::move(table));
    if (c.fd < 0 || fstat(c.fd, &st) != 0) return c;  // a context without an fd to share
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    remember(r, st, dev, c.objects);
    return c;
}

ImportedContext find_command_fd(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        errno = EBADF;
        return {};
    }
    Registry &r = registry();
    std::lock_guard lk(r.mu);
    auto it = r.by_inode.find({st.st_dev, st.st_ino});
    if (it != r.by_inode.end()) {
        ImportedContext found{it->second.dev, it->second.objects.lock()};
        if (found.objects) return found;
    }
    // Another process's context.
    std::unique_ptr<ExportTable> table = ExportTable::attach(fd);
    if (!table) return {};
    Device *dev = nullptr;
    for (Device *d : known_devices())
        if (std::strcmp(d->name, table->device()) == 0) dev = d;
    if (!dev)
        for (Device *d : scan_devices())
            if (std::strcmp(d->name, table->device()) == 0) dev = d;
    if (!dev) {
        SR_DEBUG("import: the context's device %s does not exist in this process", table->device());
        errno = ENODEV;
        return {};
    }
    ImportedContext found{dev, std::make_shared<SharedObjects>(std::move(table))};
    remember(r, st, dev, found.objects);
    return found;
}

}  // namespace softrdma::verbs
