// SPDX-License-Identifier: BSD-2-Clause
// What a verbs context's command fd stands for: its objects, by handle. rdma-core shares a
// context's kernel objects with whoever holds a dup of its cmd_fd (ibv_import_device) and
// finds them by handle (ibv_import_pd, ibv_import_mr). Our cmd_fd is a memfd: its inode names
// the context's object table, so every dup of it, in this process, finds the same table.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace softrdma::verbs {

class Device;

class SharedObjects {
  public:
    // Handles are unique in the process; 0 is never one.
    void add_pd(ibv_pd *pd);
    void remove_pd(const ibv_pd *pd);
    ibv_pd *find_pd(uint32_t handle);
    void add_mr(ibv_mr *mr);
    void remove_mr(const ibv_mr *mr);
    ibv_mr *find_mr(uint32_t handle);
    void add_dm(ibv_dm *dm);
    void remove_dm(const ibv_dm *dm);
    ibv_dm *find_dm(uint32_t handle);

  private:
    std::mutex mu_;
    std::map<uint32_t, ibv_pd *> pds_;
    std::map<uint32_t, ibv_mr *> mrs_;
    std::map<uint32_t, ibv_dm *> dms_;
};

// A new context's command fd (a memfd) and object table, registered under the fd's inode.
struct CommandFd {
    int fd = -1;  // the caller owns it
    std::shared_ptr<SharedObjects> objects;
};
CommandFd new_command_fd(Device *dev);
// The table and device a (dup of a) command fd of this process stands for; objects is null
// when the fd is none of ours.
struct ImportedContext {
    Device *dev = nullptr;
    std::shared_ptr<SharedObjects> objects;
};
ImportedContext find_command_fd(int fd);

}  // namespace softrdma::verbs
