// SPDX-License-Identifier: BSD-2-Clause
// The page each process using softrdma publishes for `softrdma stat` and `softrdma res`: its
// counters and open resources, in a memfd named "softrdma-stats" that the tool finds through
// /proc/PID/fd and maps read-only. No socket, no daemon, and nothing left behind: the memfd
// goes with the process. The layout is docs/wire.md §9.4; this header is its one definition,
// shared by the libraries (writers) and the tool (reader).
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softrdma::stats {

constexpr uint64_t kMagic = 0x3154415453525353ull;  // "SSRSTAT1"
constexpr uint32_t kVersion = 1;
constexpr const char *kMemfdName = "softrdma-stats";

// Per queue pair. Names follow the kernel's rxe hw_counters where they mean the same thing.
enum QpCounter : uint32_t {
    kSentPkts,          // segments (RC/UC) or datagrams (UD) or frames (raw) sent
    kSentBytes,         // payload bytes of SEND, WRITE and READ RESPONSE segments, datagrams
    kRcvdPkts,          // segments, datagrams or frames received
    kRcvdBytes,         // payload bytes of the same kinds received
    kSendRnrErr,        // RNR NAKs sent (no receive was posted)
    kRcvdRnrErr,        // RNR NAKs received (the peer had no receive)
    kRnrRetries,        // work requests sent again after an RNR NAK
    kRemoteAccessErr,   // requests this QP refused for a bad key, bounds or rights
    kCompletionErr,     // completions with an error status (flushes included)
    kUdDropNoRecv,      // UD/raw: dropped, no receive posted
    kUdDropQkey,        // UD: dropped, Q_Key mismatch
    kUdDropMalformed,   // UD: dropped, malformed or for a group this QP did not join
    kUdDropNotReady,    // UD/raw: dropped, QP not in RTR/RTS
    kUdDropSendFailed,  // UD/raw: the kernel refused the datagram or frame
    kUdDropOwnMcast,    // UD: own multicast, blocked by IBV_QP_CREATE_BLOCK_SELF_MCAST_LB
    kUdDropSocketFull,  // UD: the kernel's receive buffer overflowed (SO_RXQ_OVFL)
    kRawDropRule,       // raw: dropped by a DROP flow rule
    kShmDirect,         // WRITE/READ done straight in a same-host peer's shared region
    kUdFlowReleased,    // UD: destinations the flow-control watchdog released (no grant for 1 s)
    kQpCounterCount
};
extern const char *const kQpCounterNames[kQpCounterCount];

// Per process.
enum ProcCounter : uint32_t {
    kCmConnectSent,   // rdma_connect
    kCmRequestRcvd,   // connect requests delivered to a listener
    kCmEstablished,   // connections established (either side)
    kCmRejectSent,    // rdma_reject
    kCmRejectRcvd,    // REJECTED events (the peer, or nobody listening)
    kCmDisconnected,  // DISCONNECTED events
    kCmAddrError,     // ADDR_ERROR, ROUTE_ERROR, UNREACHABLE events
    kProcCounterCount
};
extern const char *const kProcCounterNames[kProcCounterCount];

// Every field a reader looks at while the owner runs is atomic (relaxed; the writer of a
// slot's counters is the one thread that holds that object's lock).
struct QpSlot {                  // 256 bytes
    std::atomic<uint32_t> live;  // 1 while the QP exists
    std::atomic<uint32_t> qpn;
    std::atomic<uint8_t> type;   // ibv_qp_type
    std::atomic<uint8_t> state;  // ibv_qp_state
    std::atomic<uint8_t> shm;    // 1: the stream moved to shared memory
    std::atomic<uint8_t> pad0;
    std::atomic<uint32_t> peer_qpn;
    std::atomic<uint32_t> sq_depth, rq_depth, max_sge, max_inline;
    std::atomic<uint64_t> peer_gid[2];  // raw bytes of the peer's GID
    std::atomic<uint64_t> c[kQpCounterCount];
    void add(QpCounter k, uint64_t n = 1) {
        c[k].store(c[k].load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    uint64_t get(QpCounter k) const { return c[k].load(std::memory_order_relaxed); }
};
static_assert(sizeof(QpSlot) <= 256);

struct MrSlot {  // 64 bytes
    std::atomic<uint32_t> live;
    std::atomic<uint32_t> handle, lkey, rkey;
    std::atomic<int32_t> access;
    std::atomic<uint32_t> pd_handle;
    std::atomic<uint64_t> addr, length;
    std::atomic<int32_t> owner_pid;  // not 0: imported from that process
};
static_assert(sizeof(MrSlot) <= 64);

struct CmSlot {  // 128 bytes
    std::atomic<uint32_t> live;
    std::atomic<uint32_t> qpn;
    std::atomic<uint8_t> state;        // cm::IdState, named by cm_state_name
    std::atomic<uint8_t> ps;           // rdma_port_space & 0xff: 6 TCP, 17 UDP, 2 IPOIB, 63 IB
    std::atomic<uint8_t> established;  // between ESTABLISHED and DISCONNECTED
    std::atomic<uint8_t> pad0;
    // sockaddr_in/in6 bytes, as the id has them
    std::atomic<uint64_t> src[4];
    std::atomic<uint64_t> dst[4];
};
static_assert(sizeof(CmSlot) <= 128);

struct Header {
    uint64_t magic;  // written last
    uint32_t version;
    pid_t pid;
    char program[64];
    uint64_t start_realtime_ns;
    uint32_t qp_slots, mr_slots, cm_slots;
    uint32_t qp_offset, mr_offset, cm_offset;
    std::atomic<uint32_t> contexts, pds, cqs, srqs;
    std::atomic<uint32_t> qps_unlisted, mrs_unlisted, cms_unlisted;  // the table was full
    std::atomic<uint64_t> c[kProcCounterCount];
};

constexpr uint32_t kQpSlots = 4096;
constexpr uint32_t kMrSlots = 8192;
constexpr uint32_t kCmSlots = 4096;
constexpr uint32_t kHeaderBytes = 4096;
constexpr uint32_t kQpOffset = kHeaderBytes;
constexpr uint32_t kMrOffset = kQpOffset + kQpSlots * 256;
constexpr uint32_t kCmOffset = kMrOffset + kMrSlots * 64;
constexpr uint32_t kPageBytes = kCmOffset + kCmSlots * 128;

// ---- the writer's side (the libraries): the process's page, made on first use. A QP, MR or
// CM id that finds no free slot gets a private one nobody reads (and the header says so).
QpSlot *claim_qp();
MrSlot *claim_mr();
CmSlot *claim_cm();
void release(QpSlot *s);
void release(MrSlot *s);
void release(CmSlot *s);
void count(ProcCounter k, uint64_t n = 1);
enum class Resource { kContext, kPd, kCq, kSrq };
void opened(Resource r);
void closed(Resource r);

}  // namespace softrdma::stats
