// SPDX-License-Identifier: BSD-2-Clause
// Receive work queues and RSS indirection tables (ibv_create_wq, ibv_create_rwq_ind_table):
// a raw packet QP created over a table spreads the frames it takes over the table's WQs by
// the Toeplitz hash of the fields its rx_hash_conf names.
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "verbs/work_queue.h"

namespace softrdma::verbs {

class Cq;

class Wq : public ibv_wq {
  public:
    Wq(ibv_context *ctx, const ibv_wq_init_attr &a, uint32_t num);
    ~Wq();
    static Wq *from(ibv_wq *w) { return static_cast<Wq *>(w); }

    int post(ibv_recv_wr *wr, ibv_recv_wr **bad);
    int modify(const ibv_wq_attr &a);
    // Takes the oldest receive; false when none is posted or the WQ is not ready.
    bool take(RecvWqe &out, std::vector<Sge> &sges);
    Cq *completion_queue() const { return cq_; }

    std::atomic<int> tables{0};  // indirection tables that hold this WQ

  private:
    void flush(std::unique_lock<std::mutex> &lk);

    std::mutex mu_;
    RecvQueue rq_;
    uint32_t max_sge_;
    Cq *cq_;
};

struct RwqIndTable : ibv_rwq_ind_table {
    std::vector<Wq *> wqs;
    std::atomic<int> users{0};  // QPs created over it
    static RwqIndTable *from(ibv_rwq_ind_table *t) { return static_cast<RwqIndTable *>(t); }
};

ibv_wq *create_wq(ibv_context *ctx, ibv_wq_init_attr *attr);
int modify_wq(ibv_wq *wq, ibv_wq_attr *attr);
int destroy_wq(ibv_wq *wq);
ibv_rwq_ind_table *create_rwq_ind_table(ibv_context *ctx, ibv_rwq_ind_table_init_attr *attr);
int destroy_rwq_ind_table(ibv_rwq_ind_table *table);

}  // namespace softrdma::verbs
