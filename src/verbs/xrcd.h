// SPDX-License-Identifier: BSD-2-Clause
// XRC domains. ibv_open_xrcd with a file descriptor names a domain by the file's inode, so
// every open of the same file gets the same domain; fd -1 makes a private one. XRC SRQs
// carry a domain-wide number (ibv_get_srq_num) that XRC receive QPs deliver to.
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace softrdma::verbs {

class Srq;

struct Xrcd : ibv_xrcd {
    dev_t dev = 0;
    ino_t ino = 0;
    bool named = false;         // opened through a file: shared by every open of that inode
    int opens = 0;              // ibv_open_xrcd calls not yet closed (registry lock)
    std::atomic<int> users{0};  // SRQs and QPs in the domain: close waits for none
    static Xrcd *from(ibv_xrcd *x) { return static_cast<Xrcd *>(x); }
};

ibv_xrcd *open_xrcd(ibv_context *ctx, ibv_xrcd_init_attr *attr);
int close_xrcd(ibv_xrcd *xrcd);

// XRC SRQ numbers: assigned at creation, looked up by receive QPs.
uint32_t xrc_srq_register(Srq *srq);
// Removes the SRQ unless a receive QP holds it (then false: EBUSY).
bool xrc_srq_retire(Srq *srq);
// The SRQ numbered `srqn` in `xrcd` with one more user (the caller drops it), or nullptr.
Srq *xrc_srq_acquire(uint32_t srqn, const Xrcd *xrcd);

}  // namespace softrdma::verbs
