// SPDX-License-Identifier: BSD-2-Clause
// QP state transitions and attribute masks, checked against the Linux kernel's qp_state_table /
// ib_modify_qp_is_ok() (drivers/infiniband/core/verbs.c), which is what ibv_modify_qp on a real
// device enforces.
#include <gtest/gtest.h>

#include <infiniband/verbs.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "verbs/qp_state_table.h"

namespace softrdma::verbs {
namespace {

constexpr ibv_qp_type kRc = IBV_QPT_RC;
constexpr ibv_qp_type kUc = IBV_QPT_UC;
constexpr ibv_qp_type kUd = IBV_QPT_UD;

constexpr ibv_qp_state kAllStates[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
                                       IBV_QPS_SQD,   IBV_QPS_SQE,  IBV_QPS_ERR};

constexpr int S = IBV_QP_STATE;
constexpr int kResetInitRcUc = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kResetInitUd = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
constexpr int kInitRtrUc = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
constexpr int kInitRtrRc = kInitRtrUc | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtrRtsRc =
    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
constexpr int kRtrRtsUc = IBV_QP_SQ_PSN;

bool ok(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type t, int mask) {
    return qp_transition_ok(cur, next, t, mask);
}

// Every single attribute bit ibv_modify_qp knows (IBV_QP_STATE .. IBV_QP_RATE_LIMIT).
std::vector<int> all_bits() {
    std::vector<int> v;
    for (int b = 0; b <= 25; ++b) {
        if (b == 22 || b == 23 || b == 24) continue;  // unused in enum ibv_qp_attr_mask
        v.push_back(1 << b);
    }
    return v;
}

// ---------------------------------------------------------------------------------- legal paths

TEST(QpStateTable, ResetToInitRequiredMasks) {
    EXPECT_TRUE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kRc, S | kResetInitRcUc));
    EXPECT_TRUE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kUc, S | kResetInitRcUc));
    EXPECT_TRUE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kUd, S | kResetInitUd));
    // The connected and datagram masks are not interchangeable.
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kRc, S | kResetInitUd));
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kUd, S | kResetInitRcUc));
}

TEST(QpStateTable, InitToRtrRequiredMasks) {
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kRc, S | kInitRtrRc));
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kUc, S | kInitRtrUc));
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kUd, S));
    // UC has no RDMA READ/atomic responder resources and no RNR.
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kUc, S | kInitRtrRc));
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kRc, S | kInitRtrUc));
}

TEST(QpStateTable, RtrToRtsRequiredMasks) {
    EXPECT_TRUE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kRc, S | kRtrRtsRc));
    EXPECT_TRUE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kUc, S | kRtrRtsUc));
    EXPECT_TRUE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kUd, S | IBV_QP_SQ_PSN));
    EXPECT_FALSE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kUc, S | kRtrRtsRc));
    EXPECT_FALSE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kRc, S | kRtrRtsUc));
}

TEST(QpStateTable, MissingAnyRequiredBitFails) {
    struct Case {
        ibv_qp_state cur, next;
        ibv_qp_type type;
        int req;
    };
    const Case cases[] = {
        {IBV_QPS_RESET, IBV_QPS_INIT, kRc, kResetInitRcUc},
        {IBV_QPS_RESET, IBV_QPS_INIT, kUc, kResetInitRcUc},
        {IBV_QPS_RESET, IBV_QPS_INIT, kUd, kResetInitUd},
        {IBV_QPS_INIT, IBV_QPS_RTR, kRc, kInitRtrRc},
        {IBV_QPS_INIT, IBV_QPS_RTR, kUc, kInitRtrUc},
        {IBV_QPS_RTR, IBV_QPS_RTS, kRc, kRtrRtsRc},
        {IBV_QPS_RTR, IBV_QPS_RTS, kUc, kRtrRtsUc},
        {IBV_QPS_RTR, IBV_QPS_RTS, kUd, IBV_QP_SQ_PSN},
    };
    for (const Case &c : cases) {
        ASSERT_TRUE(ok(c.cur, c.next, c.type, S | c.req));
        for (int bit : all_bits()) {
            if (!(c.req & bit)) continue;
            EXPECT_FALSE(ok(c.cur, c.next, c.type, S | (c.req & ~bit)))
                << c.cur << "->" << c.next << " type " << c.type << " without bit 0x" << std::hex
                << bit;
        }
    }
}

TEST(QpStateTable, ExtraNonOptionalBitFails) {
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kRc, S | kResetInitRcUc | IBV_QP_QKEY));
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kRc, S | kResetInitRcUc | IBV_QP_PATH_MTU));
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kUd, S | kResetInitUd | IBV_QP_ACCESS_FLAGS));
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kRc, S | kInitRtrRc | IBV_QP_SQ_PSN));
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kUc, S | kInitRtrUc | IBV_QP_MIN_RNR_TIMER));
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kRc, S | kInitRtrRc | IBV_QP_PORT));
    EXPECT_FALSE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kRc, S | kRtrRtsRc | IBV_QP_DEST_QPN));
    EXPECT_FALSE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kUc, S | kRtrRtsUc | IBV_QP_TIMEOUT));
    EXPECT_FALSE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kRc, S | kRtrRtsRc | IBV_QP_CAP));
    EXPECT_FALSE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kRc, S | IBV_QP_RATE_LIMIT));
    EXPECT_FALSE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kRc, S | IBV_QP_SQ_PSN));
}

TEST(QpStateTable, OptionalBitsAccepted) {
    EXPECT_TRUE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kRc, S | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER));
    EXPECT_TRUE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kRc, S));
    // MIN_RNR_TIMER is an RC-only attribute.
    EXPECT_FALSE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kUc, S | IBV_QP_MIN_RNR_TIMER));
    EXPECT_TRUE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kUc, S | IBV_QP_ACCESS_FLAGS));
    EXPECT_TRUE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kUd, S | IBV_QP_QKEY));

    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_INIT, kRc, S | kResetInitRcUc));
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_INIT, kRc, S | IBV_QP_ACCESS_FLAGS));
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_INIT, kUd, S | IBV_QP_QKEY));
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kRc,
                   S | kInitRtrRc | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX));
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kUc, S | kInitRtrUc | IBV_QP_ACCESS_FLAGS));
    EXPECT_TRUE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kUd, S | IBV_QP_QKEY | IBV_QP_PKEY_INDEX));
    EXPECT_TRUE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kRc,
                   S | kRtrRtsRc | IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE));
    EXPECT_TRUE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kUc,
                   S | kRtrRtsUc | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE));
    EXPECT_TRUE(ok(IBV_QPS_RTS, IBV_QPS_SQD, kRc, S | IBV_QP_EN_SQD_ASYNC_NOTIFY));
    EXPECT_TRUE(ok(IBV_QPS_SQD, IBV_QPS_SQD, kRc, S | IBV_QP_TIMEOUT | IBV_QP_AV));
    EXPECT_TRUE(ok(IBV_QPS_SQD, IBV_QPS_RTS, kRc, S | IBV_QP_MIN_RNR_TIMER));
}

// ---------------------------------------------------------------------------------- reset / error

TEST(QpStateTable, AnyStateToResetWithJustState) {
    for (ibv_qp_type t : {kRc, kUc, kUd}) {
        for (ibv_qp_state s : kAllStates) {
            EXPECT_TRUE(ok(s, IBV_QPS_RESET, t, S)) << s << " type " << t;
            EXPECT_FALSE(ok(s, IBV_QPS_RESET, t, S | IBV_QP_ACCESS_FLAGS)) << s << " type " << t;
        }
    }
}

TEST(QpStateTable, AnyStartedStateToErrorWithJustState) {
    for (ibv_qp_type t : {kRc, kUc, kUd}) {
        for (ibv_qp_state s : kAllStates) {
            if (s == IBV_QPS_RESET) continue;
            EXPECT_TRUE(ok(s, IBV_QPS_ERR, t, S)) << s << " type " << t;
            EXPECT_FALSE(ok(s, IBV_QPS_ERR, t, S | IBV_QP_PORT)) << s << " type " << t;
        }
    }
}

// The kernel's table has no RESET -> ERR entry (its RESET row holds only RESET and INIT), so
// ibv_modify_qp(IBV_QPS_ERR) on a fresh QP fails with EINVAL on every kernel-driven device.
TEST(QpStateTable, ResetToErrorIsIllegalAsInKernel) {
    for (ibv_qp_type t : {kRc, kUc, kUd}) {
        EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_ERR, t, S)) << "type " << t;
    }
}

// ---------------------------------------------------------------------------------- illegal paths

TEST(QpStateTable, IllegalTransitions) {
    struct Case {
        ibv_qp_state cur, next;
    };
    const Case cases[] = {
        {IBV_QPS_RESET, IBV_QPS_RTR}, {IBV_QPS_RESET, IBV_QPS_RTS}, {IBV_QPS_RESET, IBV_QPS_SQD},
        {IBV_QPS_RESET, IBV_QPS_SQE}, {IBV_QPS_INIT, IBV_QPS_RTS},  {IBV_QPS_INIT, IBV_QPS_SQD},
        {IBV_QPS_RTR, IBV_QPS_INIT},  {IBV_QPS_RTR, IBV_QPS_RTR},   {IBV_QPS_RTR, IBV_QPS_SQD},
        {IBV_QPS_RTS, IBV_QPS_INIT},  {IBV_QPS_RTS, IBV_QPS_RTR},   {IBV_QPS_RTS, IBV_QPS_SQE},
        {IBV_QPS_SQD, IBV_QPS_INIT},  {IBV_QPS_SQD, IBV_QPS_RTR},   {IBV_QPS_SQE, IBV_QPS_SQE},
        {IBV_QPS_SQE, IBV_QPS_INIT},  {IBV_QPS_ERR, IBV_QPS_INIT},  {IBV_QPS_ERR, IBV_QPS_RTR},
        {IBV_QPS_ERR, IBV_QPS_RTS},   {IBV_QPS_ERR, IBV_QPS_SQD},
    };
    for (ibv_qp_type t : {kRc, kUc, kUd}) {
        for (const Case &c : cases) {
            // Whatever the mask: try the bare state and the union of every attribute.
            EXPECT_FALSE(ok(c.cur, c.next, t, S)) << c.cur << "->" << c.next << " type " << t;
            int every = 0;
            for (int b : all_bits()) every |= b;
            EXPECT_FALSE(ok(c.cur, c.next, t, every & ~IBV_QP_CUR_STATE))
                << c.cur << "->" << c.next << " type " << t;
        }
    }
}

TEST(QpStateTable, CurStateRefusedInResetAndInit) {
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, kRc, S | kResetInitRcUc | IBV_QP_CUR_STATE));
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_RESET, kRc, S | IBV_QP_CUR_STATE));
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_INIT, kRc, S | IBV_QP_CUR_STATE));
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_RTR, kRc, S | kInitRtrRc | IBV_QP_CUR_STATE));
    EXPECT_FALSE(ok(IBV_QPS_INIT, IBV_QPS_ERR, kUd, S | IBV_QP_CUR_STATE));
    // ... and accepted where the table lists it as optional.
    EXPECT_TRUE(ok(IBV_QPS_RTR, IBV_QPS_RTS, kUc, S | kRtrRtsUc | IBV_QP_CUR_STATE));
    EXPECT_TRUE(ok(IBV_QPS_RTS, IBV_QPS_RTS, kRc, S | IBV_QP_CUR_STATE));
    EXPECT_TRUE(ok(IBV_QPS_SQD, IBV_QPS_RTS, kUd, S | IBV_QP_CUR_STATE));
    EXPECT_TRUE(ok(IBV_QPS_SQE, IBV_QPS_RTS, kUc, S | IBV_QP_CUR_STATE));
    // Not optional for the ERR/RESET rows even from a "recoverable" state.
    EXPECT_FALSE(ok(IBV_QPS_RTS, IBV_QPS_ERR, kRc, S | IBV_QP_CUR_STATE));
}

TEST(QpStateTable, OutOfRangeStatesAndTypes) {
    EXPECT_FALSE(ok(IBV_QPS_UNKNOWN, IBV_QPS_RESET, kRc, S));
    EXPECT_FALSE(ok(IBV_QPS_RTS, IBV_QPS_UNKNOWN, kRc, S));
    EXPECT_FALSE(ok(ibv_qp_state(-1), IBV_QPS_RESET, kRc, S));
    EXPECT_FALSE(ok(IBV_QPS_RESET, ibv_qp_state(100), kRc, S));
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, ibv_qp_type(0), S | kResetInitRcUc));
    EXPECT_FALSE(ok(IBV_QPS_RESET, IBV_QPS_INIT, ibv_qp_type(1000), S | kResetInitRcUc));
}

// ---------------------------------------------------------------------------------- kernel table

// An independent transcription of the kernel's qp_state_table for the types a user can create
// with ibv_create_qp (index: 0 UD, 1 UC, 2 RC, 3 XRC_INI = IBV_QPT_XRC_SEND,
// 4 XRC_TGT = IBV_QPT_XRC_RECV).
struct KRule {
    bool valid = false;
    int req[5] = {};
    int opt[5] = {};
};

class KernelTable {
  public:
    KernelTable() {
        const int ALT = IBV_QP_ALT_PATH, ACC = IBV_QP_ACCESS_FLAGS, PKEY = IBV_QP_PKEY_INDEX;
        const int CUR = IBV_QP_CUR_STATE, QKEY = IBV_QP_QKEY, MIG = IBV_QP_PATH_MIG_STATE;
        const int RNRT = IBV_QP_MIN_RNR_TIMER, PORT = IBV_QP_PORT, AV = IBV_QP_AV;

        for (int s = 0; s <= IBV_QPS_ERR; ++s) {
            r_[s][IBV_QPS_RESET].valid = true;
            if (s != IBV_QPS_RESET) r_[s][IBV_QPS_ERR].valid = true;
        }
        KRule &ri = r_[IBV_QPS_RESET][IBV_QPS_INIT];
        ri.valid = true;
        set(ri.req, PKEY | PORT | QKEY, PKEY | PORT | ACC, PKEY | PORT | ACC, PKEY | PORT | ACC,
            PKEY | PORT | ACC);

        KRule &ii = r_[IBV_QPS_INIT][IBV_QPS_INIT];
        ii.valid = true;
        set(ii.opt, PKEY | PORT | QKEY, PKEY | PORT | ACC, PKEY | PORT | ACC, PKEY | PORT | ACC,
            PKEY | PORT | ACC);

        KRule &ir = r_[IBV_QPS_INIT][IBV_QPS_RTR];
        ir.valid = true;
        set(ir.req, 0, kInitRtrUc, kInitRtrRc, kInitRtrUc, kInitRtrRc);
        set(ir.opt, PKEY | QKEY, ALT | ACC | PKEY, ALT | ACC | PKEY, ALT | ACC | PKEY,
            ALT | ACC | PKEY);

        KRule &rr = r_[IBV_QPS_RTR][IBV_QPS_RTS];
        rr.valid = true;
        set(rr.req, IBV_QP_SQ_PSN, IBV_QP_SQ_PSN, kRtrRtsRc, kRtrRtsRc,
            IBV_QP_TIMEOUT | IBV_QP_SQ_PSN);
        set(rr.opt, CUR | QKEY, CUR | ALT | ACC | MIG, CUR | ALT | ACC | RNRT | MIG,
            CUR | ALT | ACC | MIG, CUR | ALT | ACC | RNRT | MIG);

        KRule &ss = r_[IBV_QPS_RTS][IBV_QPS_RTS];
        ss.valid = true;
        set(ss.opt, CUR | QKEY, CUR | ACC | ALT | MIG, CUR | ACC | ALT | MIG | RNRT,
            CUR | ACC | ALT | MIG, CUR | ACC | ALT | MIG | RNRT);

        KRule &sd = r_[IBV_QPS_RTS][IBV_QPS_SQD];
        sd.valid = true;
        const int en = IBV_QP_EN_SQD_ASYNC_NOTIFY;
        set(sd.opt, en, en, en, en, en);

        KRule &ds = r_[IBV_QPS_SQD][IBV_QPS_RTS];
        ds.valid = true;
        set(ds.opt, CUR | QKEY, CUR | ALT | ACC | MIG, CUR | ALT | ACC | RNRT | MIG,
            CUR | ALT | ACC | MIG, CUR | ALT | ACC | RNRT | MIG);

        KRule &dd = r_[IBV_QPS_SQD][IBV_QPS_SQD];
        dd.valid = true;
        const int rd = IBV_QP_MAX_QP_RD_ATOMIC, drd = IBV_QP_MAX_DEST_RD_ATOMIC;
        const int retry = IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY, to = IBV_QP_TIMEOUT;
        set(dd.opt, PKEY | QKEY, AV | ALT | ACC | PKEY | MIG,
            PORT | AV | to | retry | rd | drd | ALT | ACC | PKEY | RNRT | MIG,
            PORT | AV | to | retry | rd | ALT | ACC | PKEY | MIG,
            PORT | AV | to | drd | ALT | ACC | PKEY | RNRT | MIG);

        KRule &es = r_[IBV_QPS_SQE][IBV_QPS_RTS];
        es.valid = true;
        set(es.opt, CUR | QKEY, CUR | ACC, 0, 0, 0);  // no RC/XRC entries in the kernel
    }

    bool ok(int cur, int next, int ti, int mask) const {
        if (mask & IBV_QP_CUR_STATE && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
            cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
            return false;
        const KRule &r = r_[cur][next];
        if (!r.valid) return false;
        if ((mask & r.req[ti]) != r.req[ti]) return false;
        return !(mask & ~(r.req[ti] | r.opt[ti] | IBV_QP_STATE));
    }

    // Masks worth probing for one cell: required alone, with each single bit added, with each
    // required bit removed, and with all optional bits.
    std::set<int> probes(int cur, int next, int ti) const {
        const KRule &r = r_[cur][next];
        std::set<int> v = {S, S | r.req[ti], S | r.req[ti] | r.opt[ti]};
        for (int b : all_bits()) {
            v.insert(S | r.req[ti] | b);
            v.insert(S | (r.req[ti] & ~b));
        }
        return v;
    }

  private:
    static void set(int *a, int ud, int uc, int rc, int xini, int xtgt) {
        a[0] = ud;
        a[1] = uc;
        a[2] = rc;
        a[3] = xini;
        a[4] = xtgt;
    }
    KRule r_[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1];
};

std::string compare_with_kernel(const ibv_qp_type *types, const int *tis, int ntypes) {
    const KernelTable k;
    std::ostringstream diff;
    int n = 0;
    for (int i = 0; i < ntypes; ++i) {
        for (int cur = 0; cur <= IBV_QPS_ERR; ++cur) {
            for (int next = 0; next <= IBV_QPS_ERR; ++next) {
                for (int mask : k.probes(cur, next, tis[i])) {
                    const bool want = k.ok(cur, next, tis[i], mask);
                    const bool got = ok(ibv_qp_state(cur), ibv_qp_state(next), types[i], mask);
                    if (want != got && n++ < 40) {
                        diff << "  type " << types[i] << " " << cur << "->" << next << " mask 0x"
                             << std::hex << mask << std::dec << ": kernel " << want << ", ours "
                             << got << "\n";
                    }
                }
            }
        }
    }
    if (n > 40) diff << "  ... " << n - 40 << " more\n";
    return diff.str();
}

// The RC/UC/UD cells, probed around every required/optional mask.
TEST(QpStateTable, MatchesKernelTableForRcUcUd) {
    const ibv_qp_type types[] = {kUd, kUc, kRc};
    const int tis[] = {0, 1, 2};
    const std::string diff = compare_with_kernel(types, tis, 3);
    EXPECT_TRUE(diff.empty()) << "differences from the kernel's qp_state_table:\n" << diff;
}

// RC QPs never enter SQE (a send error moves them to ERR), so the kernel lists no optional
// attributes for RC SQE -> RTS: CUR_STATE or ACCESS_FLAGS there are refused.
TEST(QpStateTable, SqeToRtsHasNoOptionalAttributesForRc) {
    EXPECT_TRUE(ok(IBV_QPS_SQE, IBV_QPS_RTS, kRc, S));
    EXPECT_FALSE(ok(IBV_QPS_SQE, IBV_QPS_RTS, kRc, S | IBV_QP_CUR_STATE));
    EXPECT_FALSE(ok(IBV_QPS_SQE, IBV_QPS_RTS, kRc, S | IBV_QP_ACCESS_FLAGS));
    EXPECT_TRUE(ok(IBV_QPS_SQE, IBV_QPS_RTS, kUc, S | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS));
    EXPECT_TRUE(ok(IBV_QPS_SQE, IBV_QPS_RTS, kUd, S | IBV_QP_CUR_STATE | IBV_QP_QKEY));
}

// XRC QPs have their own columns in the kernel (XRC_INI has no responder side, XRC_TGT no
// requester side): XRC_SEND and XRC_RECV follow them, not RC's.
TEST(QpStateTable, MatchesKernelTableForXrc) {
    const ibv_qp_type types[] = {IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV};
    const int tis[] = {3, 4};
    const std::string diff = compare_with_kernel(types, tis, 2);
    EXPECT_TRUE(diff.empty()) << "differences from the kernel's qp_state_table:\n" << diff;
}

}  // namespace
}  // namespace softrdma::verbs
