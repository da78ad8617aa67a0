// SPDX-License-Identifier: BSD-2-Clause
#include "verbs/qp_state_table.h"

namespace softrdma::verbs {
namespace {

// XRC_SEND follows the kernel's XRC_INI column, XRC_RECV its XRC_TGT column.
enum TypeIdx { kUd = 0, kUc = 1, kRc = 2, kXrcIni = 3, kXrcTgt = 4, kRaw = 5, kNumTypes = 6 };

struct Rule {
    bool valid = false;
    int req[kNumTypes] = {};
    int opt[kNumTypes] = {};
};

constexpr int kStates = IBV_QPS_ERR + 1;

struct Table {
    Rule r[kStates][kStates];
    constexpr Table() {
        // Every state may go to RESET and to ERR, except RESET -> ERR (kernel table).
        for (int s = 0; s < kStates; ++s) {
            r[s][IBV_QPS_RESET].valid = true;
            r[s][IBV_QPS_ERR].valid = s != IBV_QPS_RESET;
        }
        Rule &reset_init = r[IBV_QPS_RESET][IBV_QPS_INIT];
        reset_init.valid = true;
        reset_init.req[kUd] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        reset_init.req[kUc] = reset_init.req[kRc] = reset_init.req[kXrcIni] =
            reset_init.req[kXrcTgt] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        // A raw packet QP has a port and nothing else to set; RTR and RTS take nothing.
        reset_init.req[kRaw] = IBV_QP_PORT;

        Rule &init_init = r[IBV_QPS_INIT][IBV_QPS_INIT];
        init_init.valid = true;
        init_init.opt[kUd] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        init_init.opt[kUc] = init_init.opt[kRc] = init_init.opt[kXrcIni] = init_init.opt[kXrcTgt] =
            IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        init_init.opt[kRaw] = IBV_QP_PORT;

        Rule &init_rtr = r[IBV_QPS_INIT][IBV_QPS_RTR];
        init_rtr.valid = true;
        init_rtr.req[kUc] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        init_rtr.req[kRc] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        init_rtr.opt[kUd] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
        init_rtr.opt[kUc] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
        init_rtr.opt[kRc] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
        init_rtr.req[kXrcIni] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        init_rtr.req[kXrcTgt] = init_rtr.req[kRc];
        init_rtr.opt[kXrcIni] = init_rtr.opt[kXrcTgt] = init_rtr.opt[kRc];

        Rule &rtr_rts = r[IBV_QPS_RTR][IBV_QPS_RTS];
        rtr_rts.valid = true;
        rtr_rts.req[kUd] = IBV_QP_SQ_PSN;
        rtr_rts.req[kUc] = IBV_QP_SQ_PSN;
        rtr_rts.req[kRc] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                           IBV_QP_MAX_QP_RD_ATOMIC;
        rtr_rts.opt[kUd] = IBV_QP_CUR_STATE | IBV_QP_QKEY;
        rtr_rts.opt[kUc] =
            IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
        rtr_rts.opt[kRc] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                           IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
        rtr_rts.req[kXrcIni] = rtr_rts.req[kRc];
        rtr_rts.req[kXrcTgt] = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
        // XRC_INI has no responder: nothing about RNR NAKs it would send.
        rtr_rts.opt[kXrcIni] =
            IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
        rtr_rts.opt[kXrcTgt] = rtr_rts.opt[kRc];

        Rule &rts_rts = r[IBV_QPS_RTS][IBV_QPS_RTS];
        rts_rts.valid = true;
        rts_rts.opt[kUd] = IBV_QP_CUR_STATE | IBV_QP_QKEY;
        rts_rts.opt[kUc] =
            IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
        rts_rts.opt[kRc] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                           IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER;
        rts_rts.opt[kXrcIni] = rtr_rts.opt[kXrcIni];
        rts_rts.opt[kXrcTgt] = rts_rts.opt[kRc];

        Rule &rts_sqd = r[IBV_QPS_RTS][IBV_QPS_SQD];
        rts_sqd.valid = true;
        rts_sqd.opt[kUd] = rts_sqd.opt[kUc] = rts_sqd.opt[kRc] = rts_sqd.opt[kXrcIni] =
            rts_sqd.opt[kXrcTgt] = IBV_QP_EN_SQD_ASYNC_NOTIFY;

        Rule &sqd_rts = r[IBV_QPS_SQD][IBV_QPS_RTS];
        sqd_rts.valid = true;
        sqd_rts.opt[kUd] = IBV_QP_CUR_STATE | IBV_QP_QKEY;
        sqd_rts.opt[kUc] =
            IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
        sqd_rts.opt[kRc] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                           IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
        sqd_rts.opt[kXrcIni] = rtr_rts.opt[kXrcIni];
        sqd_rts.opt[kXrcTgt] = sqd_rts.opt[kRc];

        Rule &sqd_sqd = r[IBV_QPS_SQD][IBV_QPS_SQD];
        sqd_sqd.valid = true;
        sqd_sqd.opt[kUd] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
        sqd_sqd.opt[kUc] = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
                           IBV_QP_PATH_MIG_STATE;
        sqd_sqd.opt[kRc] = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
                           IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
                           IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
        // Each XRC half keeps the RC attributes of its own side only.
        sqd_sqd.opt[kXrcIni] =
            sqd_sqd.opt[kRc] & ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
        sqd_sqd.opt[kXrcTgt] =
            sqd_sqd.opt[kRc] & ~(IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);

        Rule &sqe_rts = r[IBV_QPS_SQE][IBV_QPS_RTS];
        sqe_rts.valid = true;
        sqe_rts.opt[kUd] = IBV_QP_CUR_STATE | IBV_QP_QKEY;
        sqe_rts.opt[kUc] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS;  // RC: none

        r[IBV_QPS_RESET][IBV_QPS_RESET].valid = true;
    }
};

constexpr Table kTable;

int type_index(ibv_qp_type t) {
    switch (t) {
        case IBV_QPT_UD:
            return kUd;
        case IBV_QPT_UC:
            return kUc;
        case IBV_QPT_RC:
            return kRc;
        case IBV_QPT_XRC_SEND:
            return kXrcIni;
        case IBV_QPT_XRC_RECV:
            return kXrcTgt;
        case IBV_QPT_RAW_PACKET:
            return kRaw;
        default:
            return -1;
    }
}

}  // namespace

bool qp_transition_ok(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type type, int mask) {
    if (int(cur) < 0 || int(cur) >= kStates || int(next) < 0 || int(next) >= kStates) return false;
    const int ti = type_index(type);
    if (ti < 0) return false;
    // CUR_STATE may only name a state the QP could be "recovering" from.
    if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
        cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
        return false;
    const Rule &rule = kTable.r[cur][next];
    if (!rule.valid) return false;
    const int req = rule.req[ti];
    const int opt = rule.opt[ti];
    if ((mask & req) != req) return false;
    if (mask & ~(req | opt | IBV_QP_STATE)) return false;
    return true;
}

const char *qp_state_name(ibv_qp_state s) {
    static const char *const kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    const unsigned v = unsigned(s);
    return v < sizeof kNames / sizeof *kNames ? kNames[v] : "?";
}

const char *qp_type_name(ibv_qp_type t) {
    switch (unsigned(t)) {
        case IBV_QPT_RC:
            return "RC";
        case IBV_QPT_UC:
            return "UC";
        case IBV_QPT_UD:
            return "UD";
        case IBV_QPT_RAW_PACKET:
            return "RAW_PACKET";
        case IBV_QPT_XRC_SEND:
            return "XRC_SEND";
        case IBV_QPT_XRC_RECV:
            return "XRC_RECV";
        case IBV_QPT_DRIVER:
            return "DRIVER";
        default:
            return "?";
    }
}

const char *wr_opcode_name(ibv_wr_opcode op) {
    static const char *const kNames[] = {"RDMA_WRITE",
                                         "RDMA_WRITE_WITH_IMM",
                                         "SEND",
                                         "SEND_WITH_IMM",
                                         "RDMA_READ",
                                         "ATOMIC_CMP_AND_SWP",
                                         "ATOMIC_FETCH_AND_ADD",
                                         "LOCAL_INV",
                                         "BIND_MW",
                                         "SEND_WITH_INV",
                                         "TSO",
                                         "DRIVER1",
                                         "?",
                                         "?",
                                         "FLUSH",
                                         "ATOMIC_WRITE"};
    const unsigned v = unsigned(op);
    return v < sizeof kNames / sizeof *kNames ? kNames[v] : "?";
}

}  // namespace softrdma::verbs
