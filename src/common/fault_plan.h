// SPDX-License-Identifier: BSD-2-Clause
// SOFTRDMA_FAULTS: faults an RDMA program must survive, injected on purpose so that its error
// paths can be tested without hardware that misbehaves on cue. Every decision comes from a
// generator seeded by the plan's seed and the object's creation number, so a single-threaded
// program sees the same faults on every run.
//
//   SOFTRDMA_FAULTS="seed=7,rnr=0.2,reject=0.5,cm_drop=1,cm_delay=300,disconnect=0.01,qp_error_after=100"
//
// An unknown key or a bad value disables injection entirely, with one message on stderr.
#pragma once
#include <cstdint>

namespace softrdma {

struct FaultPlan {
    uint64_t seed = 1;
    double rnr = 0;               // an incoming RC SEND is answered with an RNR NAK
    double reject = 0;            // an incoming connection request is rejected by the library
    double cm_drop = 0;           // an accepted request's reply is lost: both sides time out
    uint32_t cm_delay_ms = 0;     // every reply to a connection request leaves this much later
    double disconnect = 0;        // per completed send: the CM connection ends (DISCONNECTED)
    uint64_t qp_error_after = 0;  // after this many completed sends a QP fails (QP_FATAL)
    bool active = false;          // any of the above set
};

// Parsed from the environment once per process.
const FaultPlan &fault_plan();

// Parses a plan; false (and `err` names the offending item) if anything is malformed.
bool parse_fault_plan(const char *spec, FaultPlan &plan, const char *&err);

// One object's decisions: deterministic for a given seed and stream number.
class FaultDice {
  public:
    // Kinds of objects count their creations apart.
    enum Kind : uint32_t { kQp = 0, kCmId = 1 };
    static FaultDice for_new(Kind kind);
    // The generator of the n-th object of `kind` under `seed`.
    static FaultDice make(uint64_t seed, uint32_t kind, uint64_t n);
    bool roll(double p);

  private:
    explicit FaultDice(uint64_t state) : s_(state) {}
    uint64_t s_;
};

}  // namespace softrdma
