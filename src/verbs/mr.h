// Memory regions and the key table every incoming WRITE/READ/atomic is checked against.
#pragma once
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace softrdma::verbs {

struct Pd;

struct Mr : ibv_mr {
    Pd *owner = nullptr;
    int access = 0;
    uint64_t iova = 0;        // address the keys are valid for
    uint8_t *host = nullptr;  // where iova maps in this process
    static Mr *from(ibv_mr *m) { return static_cast<Mr *>(m); }
};

// A checked window of memory, valid only while the region stays registered.
struct MemView {
    uint8_t *host;
};

enum class KeyCheck { kOk, kBadKey, kBadPd, kBounds, kAccess };

// Registers `mr` and assigns lkey == rkey. Returns false when the table is full (ENOMEM).
bool mr_table_add(Mr *mr);
void mr_table_remove(Mr *mr);
// ibv_rereg_mr: what changes (a NULL pd or host, a negative access: unchanged). The keys stay
// (as rxe and mlx5 keep them); the change is atomic to every key check.
struct MrChange {
    Pd *pd = nullptr;
    int access = -1;
    uint8_t *host = nullptr;
    size_t length = 0;
};
void mr_table_change(Mr *mr, const MrChange &c);
// Resolves [iova, iova+len) of key `key` on `pd` with all of `access` bits required
// (0 = local read only). Zero-length accesses need only a valid key.
KeyCheck mr_check(uint32_t key, const Pd *pd, uint64_t iova, uint64_t len, int access,
                  MemView &out);

constexpr int kRemoteAccessMask =
    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

}  // namespace softrdma::verbs
