// SPDX-License-Identifier: BSD-2-Clause
// Many RC connections through the RDMA CM between a client and a server process, with every CM
// event counted per connection. Both sides run the same phases in lockstep (the out-of-band
// channel carries the barriers): open, exchange data on some connections, close.
//
// One event channel, PD, CQ and registered buffer per side serve every connection and survive
// from one open/close cycle to the next, so what a cycle leaves behind is the library's doing.
#pragma once
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <vector>

#include "process/harness.h"

namespace sr_load {

constexpr int kEventTypes = RDMA_CM_EVENT_TIMEWAIT_EXIT + 1;

// A connection's 64-byte slots in its side's registered buffer.
constexpr int kSlotTarget = 0;  // server: where the client's WRITE lands; client: its source
constexpr int kSlotSend = 1;
constexpr int kSlotRecv = 2;
constexpr int kSlots = 3;

struct Conn {
    rdma_cm_id *id = nullptr;
    uint32_t index = 0;
    uint32_t events[kEventTypes] = {};
    uint64_t peer_addr = 0;  // client: this connection's slot in the server's WRITE region
    uint32_t peer_rkey = 0;
};

class Fleet {
  public:
    Fleet(sr_test::Oob &oob, uint32_t max_conns, const char *role);
    virtual ~Fleet();
    Fleet(const Fleet &) = delete;
    Fleet &operator=(const Fleet &) = delete;
    // Events of each type seen since construction, all connections together.
    void print_totals() const;

  protected:
    struct Event {
        rdma_cm_event_type type;
        Conn *conn;
        uint8_t pd[64];
    };
    // The next CM event, acknowledged already; fails the child on a non-zero status or after
    // `deadline_ms` (harness now_ms clock).
    Event take_event(uint64_t deadline_ms);
    // Nothing more may arrive: a duplicated or late event fails here.
    void expect_no_event(int quiet_ms);
    // Every connection of [0, n) saw exactly `want` events of each type; then forgets them.
    void check_and_reset_events(uint32_t n, const uint32_t (&want)[kEventTypes]);
    ibv_qp_init_attr qp_attr() const;
    uint8_t *slot(uint32_t index, int which) {
        return buf_ + (size_t(index) * kSlots + which) * 64;
    }
    void post_recv(Conn &c);
    void post_send(Conn &c, ibv_wr_opcode op, int from_slot, uint64_t remote = 0);
    // Polls until `want` completions arrived, checking each against its connection.
    void reap(uint32_t want, uint64_t deadline_ms);
    virtual void on_recv(Conn &c, const ibv_wc &wc) = 0;
    void destroy_all(uint32_t n);
    void expect_cq_empty();
    // Each of n connections ends with DISCONNECTED then TIMEWAIT_EXIT, and nothing else comes.
    void await_closed(uint32_t n, uint64_t deadline_ms);

    sr_test::Oob &oob_;
    const char *role_;
    rdma_event_channel *ch_ = nullptr;
    ibv_context *ctx_ = nullptr;  // the CM's context for sr_lo: every id must use it
    ibv_pd *pd_ = nullptr;
    ibv_cq *cq_ = nullptr;
    ibv_mr *mr_ = nullptr;
    uint8_t *buf_ = nullptr;  // kSlots slots of 64 bytes per connection
    std::vector<Conn> conns_;
    uint64_t totals_[kEventTypes] = {};
};

class ClientFleet : public Fleet {
  public:
    ClientFleet(sr_test::Oob &oob, uint32_t max_conns);
    // Opens connections [0, n), a bounded number at a time; all stay open.
    void open(uint32_t n, uint64_t deadline_ms);
    // On each connection in `which`: WRITE a pattern, SEND a message naming it, receive the
    // server's answer. ServerFleet::exchange must run with the same arguments.
    void exchange(uint32_t tag, const std::vector<uint32_t> &which, uint64_t deadline_ms);
    // rdma_disconnect on [0, n), then DISCONNECTED and TIMEWAIT_EXIT for each, then destroy.
    void close(uint32_t n, uint64_t deadline_ms);

  private:
    void on_recv(Conn &c, const ibv_wc &wc) override;
    uint16_t port_;
    uint32_t tag_ = 0;
};

class ServerFleet : public Fleet {
  public:
    ServerFleet(sr_test::Oob &oob, uint32_t max_conns);
    ~ServerFleet() override;
    void open(uint32_t n, uint64_t deadline_ms);
    void exchange(uint32_t tag, const std::vector<uint32_t> &which, uint64_t deadline_ms);
    void close(uint32_t n, uint64_t deadline_ms);

  private:
    void on_recv(Conn &c, const ibv_wc &wc) override;
    rdma_cm_id *listen_ = nullptr;
    uint32_t tag_ = 0;
};

// Every `step`-th index of [0, n).
std::vector<uint32_t> every(uint32_t n, uint32_t step);

}  // namespace sr_load
