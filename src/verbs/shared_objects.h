// SPDX-License-Identifier: BSD-2-Clause
// What a verbs context's command fd stands for: its objects, by handle. rdma-core shares a
// context's kernel objects with whoever holds a dup of its cmd_fd (ibv_import_device) and
// finds them by handle (ibv_import_pd, ibv_import_mr). Our cmd_fd is a memfd holding the
// context's export table (verbs/export_table.h):
//  * in this process, the fd's inode names the context's object table, so an import gets
//    the original objects;
//  * in another process (the fd passed over a Unix socket), the table names the PDs and MRs
//    published there; importing one makes a local stand-in whose memory stays in its owner.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "verbs/export_table.h"
#include "verbs/pd.h"

namespace softrdma::verbs {

class Device;

class SharedObjects {
  public:
    explicit SharedObjects(std::unique_ptr<ExportTable> table) : table_(std::move(table)) {}
    ~SharedObjects();
    ExportTable *table() const { return table_.get(); }

    // Handles are unique within the context (and its imports in other processes); 0 is
    // never one. Everything added here is published for other processes.
    void add_pd(ibv_pd *pd);
    void remove_pd(const ibv_pd *pd);
    ibv_pd *find_pd(uint32_t handle);
    void add_mr(ibv_mr *mr);
    void remove_mr(const ibv_mr *mr);
    // ibv_rereg_mr: the publication changes; other processes' imports of it stop working
    // (they import it again).
    void republish_mr(ibv_mr *mr);
    ibv_mr *find_mr(uint32_t handle);
    void add_dm(ibv_dm *dm);
    void remove_dm(const ibv_dm *dm);
    ibv_dm *find_dm(uint32_t handle);

    // A PD another process published: one local stand-in per handle, counted per import.
    ibv_pd *import_foreign_pd(ibv_context *ctx, uint32_t handle);
    // Whether `pd` is such a stand-in; if so one import of it is let go (and the stand-in
    // freed with the last, unless objects still use it).
    bool unimport_foreign_pd(ibv_pd *pd);
    // An MR another process published on `pd`'s protection domain: a new stand-in region
    // (null: none by that handle on that PD).
    ibv_mr *import_foreign_mr(ibv_pd *pd, uint32_t handle);

  private:
    struct Published {
        void *object;
        int slot;  // in the export table, -1 if not published
    };
    struct Proxy {
        std::unique_ptr<Pd> pd;
        int imports = 0;
    };
    uint32_t next_handle();
    int publish(const ibv_mr *mr);
    void withdraw(std::map<uint32_t, Published> &table, uint32_t handle, const void *object);
    void *lookup(std::map<uint32_t, Published> &table, uint32_t handle);
    std::unique_ptr<ExportTable> table_;
    std::mutex mu_;
    std::map<uint32_t, Published> pds_;
    std::map<uint32_t, Published> mrs_;
    std::map<uint32_t, ibv_dm *> dms_;
    std::map<uint32_t, Proxy> proxies_;
};

// A new context's command fd (a memfd) and object table, registered under the fd's inode.
struct CommandFd {
    int fd = -1;  // the caller owns it
    std::shared_ptr<SharedObjects> objects;
};
CommandFd new_command_fd(Device *dev);
// The table and device a command fd stands for: one of this process's contexts, or one made
// in another process (then a new table on the fd's mapping, registered for later imports
// here). objects is null, errno set, when the fd is no verbs context's.
struct ImportedContext {
    Device *dev = nullptr;
    std::shared_ptr<SharedObjects> objects;
};
ImportedContext find_command_fd(int fd);

}  // namespace softrdma::verbs
