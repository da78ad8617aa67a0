// SPDX-License-Identifier: BSD-2-Clause
// A checksummed RC stream through the CM, for the fault tests (rc_faults.sh): the client moves
// <MiB> of a seeded pattern to (SEND, WRITE with immediate) or from (READ) the server in chunks;
// the side that receives checks every chunk against the pattern at its stream offset (so a lost,
// repeated or reordered chunk is caught where it happens) and both sides print a 64-bit sum of
// the stream, which the script compares. Whatever ends a stream early is printed as the program
// saw it (a work completion status, a CM event) with a CLOCK_REALTIME timestamp in ms, so the
// script can time how fast a dead peer is noticed.
//
//   sr_rc_stream server <port> <conns> [ack_timeout]
//   sr_rc_stream client <ip> <port> send|write|read <MiB> [ack_timeout] [retry_count]
//
// Both print their PID first ("PID <n>"): the script kills exactly that process.
//
// Lines printed: "PROGRESS <bytes>" every 16 MiB verified, "OK <op> bytes=<n> sum=<hex> secs=<s>",
// "WC_ERROR <status> bytes=<n> t_ms=<ms>", "EVENT <event> bytes=<n> t_ms=<ms>", "CORRUPT ...".
// Exit codes: 0 stream complete and sums equal, 2 stream ended early, 3 timeout, 4 corrupt data,
// 1 setup failure. The server serves <conns> connections one after another and exits 4 on
// corruption, else 0.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

namespace {

constexpr uint32_t kMagic = 0x53524653;  // "SRFS"
constexpr uint32_t kSlots = 16;          // chunks in flight = receive buffers / ring slots
constexpr uint32_t kChunk = 256 * 1024;
constexpr uint32_t kCtrlRecvs = 2 * kSlots;
constexpr uint64_t kSeed = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kProgressStep = 16ull << 20;
constexpr int kStreamTimeoutS = 240;

enum Op : uint32_t { kSend = 1, kWrite = 2, kRead = 3 };
enum Ctrl : uint32_t { kCredit = 1, kDone = 2 };

struct Hello {  // client -> server, in the connect private data
    uint32_t magic, op;
    uint64_t total;
};
struct Reply {  // server -> client, in the accept private data
    uint64_t addr;
    uint32_t rkey, pad;
};
struct CtrlMsg {  // inline SENDs: a credit per verified chunk, the closing sums
    uint32_t kind, idx;
    uint64_t sum;
};

[[noreturn]] void die(const char *what) {
    std::printf("SETUP_ERROR %s (errno %d)\n", what, errno);
    std::fflush(stdout);
    std::exit(1);
}

long long realtime_ms() {
    timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000ll + t.tv_nsec / 1000000;
}

double mono_s() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

uint64_t pattern_word(uint64_t offset) {  // splitmix64 of the word index
    uint64_t z = kSeed + (offset / 8) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fill(uint8_t *p, uint64_t offset, uint32_t len) {
    for (uint32_t i = 0; i < len; i += 8) {
        const uint64_t w = pattern_word(offset + i);
        std::memcpy(p + i, &w, 8);
    }
}

// The stream sum: order-sensitive, so a reordered stream changes it.
struct Sum {
    uint64_t h = 0xcbf29ce484222325ull;
    void add(const uint8_t *p, uint32_t len) {
        for (uint32_t i = 0; i < len; i += 8) {
            uint64_t w;
            std::memcpy(&w, p + i, 8);
            h = (h ^ w) * 0x100000001b3ull;
            h ^= h >> 29;
        }
    }
};

// Checks a received chunk against the pattern; prints where it first differs.
bool verify(const uint8_t *p, uint64_t offset, uint32_t len) {
    for (uint32_t i = 0; i < len; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        if (w != pattern_word(offset + i)) {
            std::printf("CORRUPT offset=%" PRIu64 " got=%016" PRIx64 " want=%016" PRIx64 "\n",
                        offset + i, w, pattern_word(offset + i));
            std::fflush(stdout);
            return false;
        }
    }
    return true;
}

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
    std::fflush(stdout);
}

// Waits (bounded) for the next CM event on a blocking channel.
rdma_cm_event *next_event(rdma_event_channel *ch, int timeout_ms) {
    pollfd p{ch->fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return nullptr;
    rdma_cm_event *ev = nullptr;
    return rdma_get_cm_event(ch, &ev) ? nullptr : ev;
}

rdma_cm_event *poll_event(rdma_event_channel *ch) {
    return next_event(ch, 0);
}

void set_ack_timeout(rdma_cm_id *id, int ack_timeout) {  // < 0: the CM's default
    uint8_t t = uint8_t(ack_timeout);
    if (ack_timeout >= 0 &&
        rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof t))
        die("ACK_TIMEOUT");
}

struct Mr {
    ibv_mr *mr = nullptr;
    std::unique_ptr<uint8_t[]> buf;
    Mr(ibv_pd *pd, size_t len, int access) : buf(new uint8_t[len]) {
        mr = ibv_reg_mr(pd, buf.get(), len, access);
        if (!mr) die("ibv_reg_mr");
    }
    ~Mr() { ibv_dereg_mr(mr); }
    uint8_t *at(size_t off) { return buf.get() + off; }
};

// One connection's verbs objects and the stream's bookkeeping, shared by both roles.
struct Stream {
    rdma_cm_id *id;
    ibv_cq *cq = nullptr;
    Op op = kSend;
    uint64_t total = 0;
    uint64_t verified = 0;  // bytes checked by whichever side receives
    uint64_t next_progress = kProgressStep;
    Sum sum;
    std::unique_ptr<Mr> data, ctrl;
    double t0 = 0;

    explicit Stream(rdma_cm_id *i) : id(i) {}
    ~Stream() {
        data.reset();
        ctrl.reset();
        if (id->qp) rdma_destroy_qp(id);
        if (cq) ibv_destroy_cq(cq);
    }

    // Control messages arrive at the client always and at the server only in READ streams
    // (where no data receive could take them first).
    void make_qp(bool ctrl_recvs) {
        cq = ibv_create_cq(id->verbs, 256, nullptr, nullptr, 0);
        if (!cq) die("ibv_create_cq");
        ibv_qp_init_attr a{};
        a.send_cq = a.recv_cq = cq;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = 2 * kSlots + kCtrlRecvs;
        a.cap.max_recv_wr = kCtrlRecvs + kSlots;
        a.cap.max_send_sge = a.cap.max_recv_sge = 1;
        a.cap.max_inline_data = sizeof(CtrlMsg);
        if (rdma_create_qp(id, nullptr, &a)) die("rdma_create_qp");
        ctrl = std::make_unique<Mr>(id->pd, kCtrlRecvs * sizeof(CtrlMsg), IBV_ACCESS_LOCAL_WRITE);
        for (uint32_t i = 0; ctrl_recvs && i < kCtrlRecvs; ++i) post_ctrl_recv(i);
    }

    // Control receives carry wr_id >= kSlots; data receives (server, SEND/WRITE) wr_id < kSlots.
    void post_ctrl_recv(uint32_t i) {
        ibv_sge s{reinterpret_cast<uintptr_t>(ctrl->at(i * sizeof(CtrlMsg))), sizeof(CtrlMsg),
                  ctrl->mr->lkey};
        ibv_recv_wr wr{}, *bad;
        wr.wr_id = kSlots + i;
        wr.sg_list = &s;
        wr.num_sge = 1;
        if (ibv_post_recv(id->qp, &wr, &bad)) die("post ctrl recv");
    }

    // The server's receive for chunk slot `i`. WRITE with immediate consumes a receive but
    // places nothing in it.
    void post_data_recv(uint32_t i) {
        ibv_sge sge{reinterpret_cast<uintptr_t>(data->at(size_t(i) * kChunk)), kChunk,
                    data->mr->lkey};
        ibv_recv_wr wr{}, *bad;
        wr.wr_id = i;
        wr.sg_list = op == kSend ? &sge : nullptr;
        wr.num_sge = op == kSend ? 1 : 0;
        if (ibv_post_recv(id->qp, &wr, &bad)) die("post data recv");
    }

    CtrlMsg ctrl_msg(const ibv_wc &wc) {
        CtrlMsg m;
        std::memcpy(&m, ctrl->at((wc.wr_id - kSlots) * sizeof(CtrlMsg)), sizeof m);
        post_ctrl_recv(uint32_t(wc.wr_id - kSlots));
        return m;
    }

    // A send queue full of control messages the peer has not acknowledged yet (its ACKs
    // queue behind its data in the same TCP stream) is normal: owed ones go out later, in
    // order, from flush_ctrl().
    void send_ctrl(uint32_t kind, uint32_t idx, uint64_t s) {
        if (owed_credits || owed_done) return send_ctrl_later(kind, s);
        if (!post_ctrl(kind, idx, s)) send_ctrl_later(kind, s);
    }
    void send_ctrl_later(uint32_t kind, uint64_t s) {
        if (kind == kCredit) {
            ++owed_credits;
        } else {
            owed_done = true;
            done_sum = s;
        }
    }
    void flush_ctrl() {
        while (owed_credits && post_ctrl(kCredit, 0, 0)) --owed_credits;
        if (!owed_credits && owed_done && post_ctrl(kDone, 0, done_sum)) owed_done = false;
    }
    bool post_ctrl(uint32_t kind, uint32_t idx, uint64_t s) {
        CtrlMsg m{kind, idx, s};
        ibv_sge sge{reinterpret_cast<uintptr_t>(&m), sizeof m, 0};
        ibv_send_wr wr{}, *bad;
        wr.wr_id = ~0ull;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
        const int rc = ibv_post_send(id->qp, &wr, &bad);
        if (rc && rc != ENOMEM) die("post ctrl send");
        return rc == 0;
    }
    uint64_t owed_credits = 0;
    bool owed_done = false;
    uint64_t done_sum = 0;

    // A verified chunk: into the sum, and a progress line now and then for the script.
    void account(const uint8_t *p, uint32_t len) {
        sum.add(p, len);
        verified += len;
        if (verified >= next_progress) {
            say("PROGRESS %" PRIu64 "\n", verified);
            next_progress += kProgressStep;
        }
    }

    // What ended the stream early, as the program saw it; then the CM's view, bounded.
    int report_failure(const ibv_wc *wc, rdma_cm_event *ev, rdma_event_channel *ch, bool active) {
        if (wc) {
            say("WC_ERROR %s bytes=%" PRIu64 " t_ms=%lld\n", ibv_wc_status_str(wc->status),
                verified, realtime_ms());
        } else {
            say("EVENT %s bytes=%" PRIu64 " t_ms=%lld\n", rdma_event_str(ev->event), verified,
                realtime_ms());
            const bool disconnected = ev->event == RDMA_CM_EVENT_DISCONNECTED;
            rdma_ack_cm_event(ev);
            // Outstanding work is flushed once the QP is in error: report the first status.
            ibv_wc w;
            for (int i = 0; i < 2000; ++i) {
                const int n = ibv_poll_cq(cq, 1, &w);
                if (n == 1 && w.status != IBV_WC_SUCCESS) {
                    say("FLUSH %s\n", ibv_wc_status_str(w.status));
                    break;
                }
                if (n == 0) {
                    timespec d{0, 1000000};
                    nanosleep(&d, nullptr);
                }
            }
            if (disconnected) return 2;
        }
        // After a failed work request the application disconnects; hardware's DREQ reaches
        // the peer once the link works again.
        if (active) rdma_disconnect(id);
        for (int i = 0; i < 100; ++i) {
            rdma_cm_event *e = next_event(ch, 100);
            if (!e) continue;
            const auto t = e->event;
            rdma_ack_cm_event(e);
            say("EVENT %s bytes=%" PRIu64 " t_ms=%lld\n", rdma_event_str(t), verified,
                realtime_ms());
            if (t == RDMA_CM_EVENT_DISCONNECTED) break;
        }
        return 2;
    }

    int finish_ok(uint64_t peer_sum) {
        const double secs = mono_s() - t0;
        if (peer_sum != sum.h) {
            say("SUM_MISMATCH mine=%016" PRIx64 " peer=%016" PRIx64 "\n", sum.h, peer_sum);
            return 4;
        }
        static const char *names[] = {"", "send", "write", "read"};
        say("OK %s bytes=%" PRIu64 " sum=%016" PRIx64 " secs=%.3f MB/s=%.1f\n", names[op], total,
            sum.h, secs, double(total) / secs / 1e6);
        return 0;
    }
};

// --- client -------------------------------------------------------------------------------

int run_client(const char *ip, int port, Op op, uint64_t total, int ack_timeout, int retry) {
    rdma_event_channel *ch = rdma_create_event_channel();
    rdma_cm_id *id;
    if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)) die("create id");
    sockaddr_in d{};
    d.sin_family = AF_INET;
    d.sin_port = htons(uint16_t(port));
    if (inet_pton(AF_INET, ip, &d.sin_addr) != 1) die("address");
    set_ack_timeout(id, ack_timeout);
    rdma_cm_event *ev;
    // Long enough for a few ARP retries: the loss tests flush the neighbour cache first.
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&d), 5000)) die("resolve");
    if (!(ev = next_event(ch, 8000)) || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) die("addr");
    rdma_ack_cm_event(ev);
    if (rdma_resolve_route(id, 2000)) die("route");
    if (!(ev = next_event(ch, 5000)) || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED) die("route ev");
    rdma_ack_cm_event(ev);

    Stream s(id);
    s.op = op;
    s.total = total;
    s.make_qp(true);
    s.data = std::make_unique<Mr>(id->pd, size_t(kSlots) * kChunk, IBV_ACCESS_LOCAL_WRITE);

    Hello h{kMagic, op, total};
    rdma_conn_param p{};
    p.private_data = &h;
    p.private_data_len = sizeof h;
    p.responder_resources = p.initiator_depth = kSlots;
    p.retry_count = uint8_t(retry);
    p.rnr_retry_count = 7;
    if (rdma_connect(id, &p)) die("connect");
    // Up to the CM's own connect timeout (30 s): a READ server fills and sums its whole
    // stream (2 GiB for the link-cut test, 7-12 s on a loaded runner) before it accepts.
    if (!(ev = next_event(ch, 30000)) || ev->event != RDMA_CM_EVENT_ESTABLISHED) {
        say("CONNECT_FAILED %s\n", ev ? rdma_event_str(ev->event) : "timeout");
        return 1;
    }
    Reply r;
    std::memcpy(&r, ev->param.conn.private_data, sizeof r);
    rdma_ack_cm_event(ev);
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK)) die("nonblock");

    const uint64_t chunks = total / kChunk;
    uint64_t posted = 0, credited = 0, read_done = 0;
    bool done = false;
    uint64_t peer_sum = 0;
    s.t0 = mono_s();
    const double deadline = s.t0 + kStreamTimeoutS;
    uint32_t spins = 0;
    while (!done) {
        s.flush_ctrl();
        // Keep kSlots chunks in flight: the server returns a credit per verified chunk.
        const uint64_t limit = op == kRead ? read_done : credited;
        while (posted < chunks && posted - limit < kSlots) {
            const uint32_t slot = uint32_t(posted % kSlots);
            uint8_t *buf = s.data->at(size_t(slot) * kChunk);
            ibv_sge sge{reinterpret_cast<uintptr_t>(buf), kChunk, s.data->mr->lkey};
            ibv_send_wr wr{}, *bad;
            wr.wr_id = posted;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            wr.send_flags = IBV_SEND_SIGNALED;
            if (op == kRead) {
                wr.opcode = IBV_WR_RDMA_READ;
                wr.wr.rdma.remote_addr = r.addr + posted * kChunk;
                wr.wr.rdma.rkey = r.rkey;
            } else {
                fill(buf, posted * kChunk, kChunk);
                s.sum.add(buf, kChunk);
                if (op == kWrite) {
                    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
                    wr.imm_data = htonl(uint32_t(posted));
                    wr.wr.rdma.remote_addr = r.addr + size_t(slot) * kChunk;
                    wr.wr.rdma.rkey = r.rkey;
                } else {
                    wr.opcode = IBV_WR_SEND;
                }
            }
            if (ibv_post_send(id->qp, &wr, &bad)) die("post_send");
            ++posted;
        }
        ibv_wc wc[16];
        const int n = ibv_poll_cq(s.cq, 16, wc);
        if (n < 0) die("poll_cq");
        for (int i = 0; i < n; ++i) {
            if (wc[i].status != IBV_WC_SUCCESS) return s.report_failure(&wc[i], nullptr, ch, true);
            if (wc[i].opcode == IBV_WC_RECV) {
                const CtrlMsg m = s.ctrl_msg(wc[i]);
                if (m.kind == kCredit) {
                    ++credited;
                    s.verified = credited * kChunk;
                } else if (m.kind == kDone) {
                    peer_sum = m.sum;
                    done = true;
                }
            } else if (wc[i].opcode == IBV_WC_RDMA_READ) {
                // READ completions arrive in order: the oldest outstanding chunk is complete.
                const uint64_t idx = wc[i].wr_id;
                const uint8_t *buf = s.data->at(size_t(idx % kSlots) * kChunk);
                if (idx != read_done) {
                    say("CORRUPT read completion %" PRIu64 " before %" PRIu64 "\n", idx, read_done);
                    return 4;
                }
                if (!verify(buf, idx * kChunk, kChunk)) return 4;
                s.account(buf, kChunk);
                if (++read_done == chunks) s.send_ctrl(kDone, 0, s.sum.h);
            }
        }
        if (++spins % 256 == 0) {
            if (rdma_cm_event *e = poll_event(ch)) return s.report_failure(nullptr, e, ch, true);
            if (mono_s() > deadline) {
                say("TIMEOUT bytes=%" PRIu64 "\n", s.verified);
                return 3;
            }
        }
    }
    const int rc = s.finish_ok(peer_sum);
    rdma_disconnect(id);
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK)) die("blocking");
    ev = next_event(ch, 5000);
    if (!ev || ev->event != RDMA_CM_EVENT_DISCONNECTED) {
        say("NO_DISCONNECTED\n");
        return 2;
    }
    rdma_ack_cm_event(ev);
    return rc;
}

// --- server -------------------------------------------------------------------------------

// Serves one connection to the end of its stream or its failure.
int serve_stream(rdma_event_channel *ch, Stream &s, int conn) {
    s.make_qp(s.op == kRead);
    Reply r{};
    if (s.op == kRead) {
        // The whole stream lives in one region the client reads from.
        s.data = std::make_unique<Mr>(s.id->pd, s.total, IBV_ACCESS_REMOTE_READ);
        for (uint64_t off = 0; off < s.total; off += kChunk) {
            fill(s.data->at(off), off, kChunk);
            s.sum.add(s.data->at(off), kChunk);
        }
    } else {
        s.data = std::make_unique<Mr>(s.id->pd, size_t(kSlots) * kChunk,
                                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        for (uint32_t i = 0; i < kSlots; ++i) s.post_data_recv(i);
    }
    r.addr = reinterpret_cast<uintptr_t>(s.data->at(0));
    r.rkey = s.data->mr->rkey;
    rdma_conn_param p{};
    p.private_data = &r;
    p.private_data_len = sizeof r;
    p.responder_resources = p.initiator_depth = kSlots;
    p.rnr_retry_count = 7;
    if (rdma_accept(s.id, &p)) die("accept");
    rdma_cm_event *ev = next_event(ch, 10000);
    if (!ev || ev->event != RDMA_CM_EVENT_ESTABLISHED) {
        say("CONN %d NOT_ESTABLISHED %s\n", conn, ev ? rdma_event_str(ev->event) : "timeout");
        if (ev) rdma_ack_cm_event(ev);
        return 0;
    }
    rdma_ack_cm_event(ev);
    say("CONN %d ESTABLISHED\n", conn);

    const uint64_t chunks = s.total / kChunk;
    uint64_t got = 0, peer_sum = 0;
    bool done = false;
    s.t0 = mono_s();
    const double deadline = s.t0 + kStreamTimeoutS;
    uint32_t spins = 0;
    while (!done || s.owed_credits || s.owed_done) {
        s.flush_ctrl();
        ibv_wc wc[16];
        const int n = ibv_poll_cq(s.cq, 16, wc);
        if (n < 0) die("poll_cq");
        for (int i = 0; i < n; ++i) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                say("CONN %d LOST\n", conn);
                return s.report_failure(&wc[i], nullptr, ch, false);
            }
            if (wc[i].opcode == IBV_WC_SEND) continue;
            if (wc[i].wr_id >= kSlots) {  // the client's closing sum (READ streams)
                const CtrlMsg m = s.ctrl_msg(wc[i]);
                if (m.kind == kDone) {
                    peer_sum = m.sum;
                    s.verified = s.total;
                    s.send_ctrl(kDone, 0, s.sum.h);
                    done = true;
                }
                continue;
            }
            // A data chunk: SEND lands in the receive's buffer, WRITE in the slot it names.
            const uint64_t idx = s.op == kWrite ? ntohl(wc[i].imm_data) : got;
            const uint32_t slot = s.op == kWrite ? uint32_t(idx % kSlots) : uint32_t(wc[i].wr_id);
            const uint8_t *buf = s.data->at(size_t(slot) * kChunk);
            // WRITE with immediate reports the written length too, as hardware does.
            if (idx != got || wc[i].byte_len != kChunk || !verify(buf, idx * kChunk, kChunk)) {
                say("CORRUPT chunk %" PRIu64 " (expected %" PRIu64 ", len %u)\n", idx, got,
                    wc[i].byte_len);
                return 4;
            }
            s.account(buf, kChunk);
            ++got;
            s.post_data_recv(slot);
            s.send_ctrl(kCredit, uint32_t(idx), 0);
            if (got == chunks) {
                s.send_ctrl(kDone, 0, s.sum.h);
                peer_sum = s.sum.h;  // the client compares: it sent the stream
                done = true;
            }
        }
        if (++spins % 256 == 0) {
            if (rdma_cm_event *e = poll_event(ch)) {
                say("CONN %d LOST\n", conn);
                return s.report_failure(nullptr, e, ch, false);
            }
            if (mono_s() > deadline) {
                say("CONN %d TIMEOUT bytes=%" PRIu64 "\n", conn, s.verified);
                return 3;
            }
        }
    }
    const int rc = s.finish_ok(peer_sum);
    // The client disconnects once it has the sums; wait for that (bounded).
    for (int i = 0; i < 100; ++i) {
        ev = next_event(ch, 100);
        if (!ev) continue;
        const auto t = ev->event;
        rdma_ack_cm_event(ev);
        if (t == RDMA_CM_EVENT_DISCONNECTED) {
            say("CONN %d DISCONNECTED\n", conn);
            break;
        }
    }
    return rc;
}

int serve(rdma_event_channel *ch, rdma_cm_event *req, int conn, int ack_timeout) {
    Hello h;
    if (req->param.conn.private_data_len < sizeof h) die("hello");
    std::memcpy(&h, req->param.conn.private_data, sizeof h);
    if (h.magic != kMagic || h.op < kSend || h.op > kRead || h.total % kChunk) die("hello");
    rdma_cm_id *id = req->id;
    rdma_ack_cm_event(req);
    set_ack_timeout(id, ack_timeout);
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK)) die("nonblock");
    int rc;
    {
        Stream s(id);
        s.op = Op(h.op);
        s.total = h.total;
        rc = serve_stream(ch, s, conn);
    }
    if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK)) die("blocking");
    rdma_destroy_id(id);
    return rc;
}

int run_server(int port, int conns, int ack_timeout) {
    rdma_event_channel *ch = rdma_create_event_channel();
    rdma_cm_id *listen_id;
    if (!ch || rdma_create_id(ch, &listen_id, nullptr, RDMA_PS_TCP)) die("create id");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    if (rdma_bind_addr(listen_id, reinterpret_cast<sockaddr *>(&a)) || rdma_listen(listen_id, 8))
        die("listen");
    say("LISTENING %d\n", port);
    int rc = 0;
    for (int c = 1; c <= conns; ++c) {
        rdma_cm_event *ev = nullptr;
        for (int i = 0; i < 600 && !ev; ++i) {  // at most a minute per connection
            ev = next_event(ch, 100);
            if (ev && ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
                rdma_ack_cm_event(ev);  // a late event of the previous connection
                ev = nullptr;
            }
        }
        if (!ev) {
            say("NO_CONNECTION %d\n", c);
            return 3;
        }
        if (serve(ch, ev, c, ack_timeout) == 4) rc = 4;
        // What a connection leaves behind, whichever way it ended: the script compares.
        int fds = 0;
        if (DIR *d = opendir("/proc/self/fd")) {
            while (readdir(d)) ++fds;
            closedir(d);
        }
        say("FDS %d\n", fds - 3);  // without ".", ".." and the directory's own fd
    }
    rdma_destroy_id(listen_id);
    rdma_destroy_event_channel(ch);
    return rc;
}

}  // namespace

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    std::printf("PID %d\n", int(getpid()));
    if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "server") == 0)
        return run_server(std::atoi(argv[2]), std::atoi(argv[3]),
                          argc == 5 ? std::atoi(argv[4]) : -1);
    if (argc >= 6 && std::strcmp(argv[1], "client") == 0) {
        const char *o = argv[4];
        const Op op = !std::strcmp(o, "send") ? kSend : !std::strcmp(o, "write") ? kWrite : kRead;
        const uint64_t total = uint64_t(std::atoll(argv[5])) << 20;
        const int ack_timeout = argc > 6 ? std::atoi(argv[6]) : -1;
        const int retry = argc > 7 ? std::atoi(argv[7]) : 7;
        return run_client(argv[2], std::atoi(argv[3]), op, total, ack_timeout, retry);
    }
    std::fprintf(
        stderr,
        "usage: %s server <port> <conns> [ack_timeout] | client <ip> <port> send|write|read <MiB> "
        "[ack_timeout] [retry_count]\n",
        argv[0]);
    return 1;
}
