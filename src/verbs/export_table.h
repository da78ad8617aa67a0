// SPDX-License-Identifier: BSD-2-Clause
// The part of a verbs context that other processes can see: its PDs and MRs, published in the
// context's command fd (a memfd). A process that receives the fd (SCM_RIGHTS) maps the same
// table, imports objects by handle, and reaches the memory of an imported region through
// process_vm_readv/writev (verbs/foreign_memory.h). Every process that uses the context
// publishes what it makes on it, so the sharing goes both ways, as it does through the kernel.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace softrdma::verbs {

// One published object, as an importer reads it.
struct ExportedObject {
    uint32_t handle = 0;
    uint32_t pd_handle = 0;  // MR: its PD
    pid_t pid = 0;           // the process whose memory the region is
    uint64_t addr = 0;       // where the region starts in that process
    uint64_t length = 0;
    uint64_t iova = 0;
    int access = 0;
    uint32_t key = 0;  // lkey == rkey in the owning process
};

// Names one live publication: its slot and the version the slot had when it was read.
struct ExportRef {
    int slot = -1;
    uint32_t version = 0;
};

class ExportTable {
  public:
    ~ExportTable();
    ExportTable(const ExportTable &) = delete;
    ExportTable &operator=(const ExportTable &) = delete;

    // The owner's side: sizes and initialises the memfd `fd` for device `device`.
    static std::unique_ptr<ExportTable> create(int fd, const char *device);
    // An importer's side: maps a table someone created; null (errno EOPNOTSUPP) if `fd` is
    // not one.
    static std::unique_ptr<ExportTable> attach(int fd);

    const char *device() const;
    pid_t creator() const;
    // Handles are unique among everything published in this table, across processes.
    uint32_t next_handle();

    // Returns the slot, or -1 when the table is full (the object then cannot be imported
    // elsewhere; it still works here).
    int publish_pd(uint32_t handle);
    int publish_mr(const ExportedObject &o);
    // Withdraws a publication and waits until no importer is inside its memory.
    void retire(int slot);

    // Live publications of other processes.
    bool find_pd(uint32_t handle) const;
    bool find_mr(uint32_t handle, uint32_t pd_handle, ExportedObject &out, ExportRef &ref) const;

    // An importer's access to a region's memory: between enter (true) and leave, its owner
    // cannot finish withdrawing it. enter is false once it is withdrawn or republished.
    bool enter(const ExportRef &ref);
    void leave(const ExportRef &ref);

    // Serialises atomics on the table's regions between processes: the owner's own CPU
    // atomics and an importer's read-modify-write through process_vm_* take the same lock.
    void lock_atomics();
    void unlock_atomics();

  private:
    struct Header;
    struct Slot;
    ExportTable(void *map, size_t len);
    Header *header() const;
    Slot *slot(int i) const;
    int claim();
    void *map_;
    size_t len_;
};

// Holds a table's atomics lock for a scope (a null table: nothing to hold).
class AtomicsGuard {
  public:
    explicit AtomicsGuard(ExportTable *t) : t_(t) {
        if (t_) t_->lock_atomics();
    }
    ~AtomicsGuard() {
        if (t_) t_->unlock_atomics();
    }
    AtomicsGuard(const AtomicsGuard &) = delete;
    AtomicsGuard &operator=(const AtomicsGuard &) = delete;

  private:
    ExportTable *t_;
};

}  // namespace softrdma::verbs
