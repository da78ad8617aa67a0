// SPDX-License-Identifier: BSD-2-Clause
// Two-process test harness: each test forks two children joined by a socketpair (the
// out-of-band channel raw-verbs programs use), runs one function in each, and collects exit
// codes. The parent never touches the library, so each child starts it fresh.
#pragma once
#include <infiniband/verbs.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace sr_test {

#define PCHECK(cond)                                                                        \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            std::fprintf(stderr, "[pid %d] %s:%d: check failed: %s (errno %d)\n", getpid(), \
                         __FILE__, __LINE__, #cond, errno);                                 \
            std::fflush(stderr);                                                            \
            _exit(1);                                                                       \
        }                                                                                   \
    } while (0)

#define PCHECK_EQ(a, b)                                                                       \
    do {                                                                                      \
        const auto va_ = (a);                                                                 \
        const auto vb_ = (b);                                                                 \
        if (!(va_ == vb_)) {                                                                  \
            std::fprintf(stderr, "[pid %d] %s:%d: %s == %s failed: %lld vs %lld\n", getpid(), \
                         __FILE__, __LINE__, #a, #b, (long long)va_, (long long)vb_);         \
            std::fflush(stderr);                                                              \
            _exit(1);                                                                         \
        }                                                                                     \
    } while (0)

class Oob {
  public:
    explicit Oob(int fd) : fd_(fd) {}
    void put(const void *p, size_t n);
    void get(void *p, size_t n);
    template <typename T>
    void put(const T &v) {
        put(&v, sizeof v);
    }
    template <typename T>
    T get() {
        T v;
        get(&v, sizeof v);
        return v;
    }
    void barrier();
    // Hands a file descriptor to the other side (SCM_RIGHTS); recv_fd returns the new one.
    void send_fd(int fd);
    int recv_fd();

  private:
    int fd_;
};

struct PairResult {
    int status_a = -1;  // exit code, or 128+signal
    int status_b = -1;
    bool timed_out = false;
    bool ok() const { return !timed_out && status_a == 0 && status_b == 0; }
};

PairResult run_pair(const std::function<int(Oob &)> &a, const std::function<int(Oob &)> &b,
                    int timeout_ms = 60000);

uint64_t now_ms();
// /proc/self/task/<tid> of the library's background thread ("softrdma-prog"), empty if there
// is none.
std::string engine_task();
// The QP's state, as ibv_query_qp reports it (the child fails if the query does).
ibv_qp_state qp_state_of(ibv_qp *qp);
// The other half of a pair for single-process tests: waits at one barrier, then exits 0.
int idle_peer(Oob &oob);
// True once /proc says `pid` is stopped (state T), false after `ms` milliseconds.
bool wait_stopped(pid_t pid, int ms);
// Tells the peer our PID, then stops the whole process (engine thread included) until the
// peer sends a char: a forked helper waits for it and continues us.
void stop_until_continued(Oob &oob);

// Evaluates the pair once and reports all three outcomes on failure.
#define EXPECT_PAIR_OK(expr)                                                \
    do {                                                                    \
        const ::sr_test::PairResult r_ = (expr);                            \
        EXPECT_TRUE(r_.ok()) << "a=" << r_.status_a << " b=" << r_.status_b \
                             << " timed_out=" << r_.timed_out;              \
    } while (0)

struct EpOptions {
    ibv_qp_type type = IBV_QPT_RC;
    size_t buf_size = 1 << 20;
    int mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC;
    int qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    uint32_t max_send_wr = 64, max_recv_wr = 64, max_sge = 4, max_inline = 0;
    uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 1;
    uint8_t max_rd_atomic = 4, max_dest_rd_atomic = 4;
    uint32_t qkey = 0x11111111;  // UD only
    uint32_t create_flags = 0;   // ibv_create_qp_ex create_flags when nonzero
    bool sig_all = false;
    bool channel = false;
    int cqe = 256;
};

// What one side tells the other out of band.
struct Wire {
    uint32_t qpn;
    uint8_t gid[16];
    uint64_t addr;
    uint32_t rkey;
};

// Runs the `softrdma` tool (SR_CLI) with `args`; its output, and its wait status in `status`.
std::string run_cli(const std::string &args, int &status);
// The number after "key": inside the JSON object that starts at "qpn": <qpn> (stat --json).
uint64_t qp_value(const std::string &json, uint32_t qpn, const char *key);

class Endpoint {
  public:
    explicit Endpoint(const EpOptions &o = {});
    ~Endpoint();
    Wire local() const;
    void connect(const Wire &peer);
    // Exchanges Wire records, moves the QP to RTS, and waits for the peer to do the same.
    void exchange_and_connect(Oob &oob);

    void post_recv(uint64_t wr_id, size_t off, uint32_t len);
    int post(ibv_wr_opcode op, uint64_t wr_id, size_t off, uint32_t len, uint64_t remote_off = 0,
             unsigned flags = IBV_SEND_SIGNALED, uint32_t imm = 0);
    int post_atomic(ibv_wr_opcode op, uint64_t wr_id, size_t off, uint64_t remote_off,
                    uint64_t compare_add, uint64_t swap);
    // Polls until one completion arrives; the child fails after `timeout_ms`.
    ibv_wc wait_wc(int timeout_ms = 20000);
    // True if no completion arrives within `ms` (drives progress meanwhile).
    bool quiet_for(int ms);
    ibv_qp_state qp_state();

    EpOptions opt;
    ibv_device **list = nullptr;
    ibv_context *ctx = nullptr;
    ibv_pd *pd = nullptr;
    ibv_comp_channel *chan = nullptr;
    ibv_cq *cq = nullptr;
    ibv_qp *qp = nullptr;
    ibv_mr *mr = nullptr;
    uint8_t *buf = nullptr;
    Wire peer{};
};

// A peer that only has to be there: connects an Endpoint made with `o`, waits at one
// barrier, then exits 0.
int connected_idle_peer(Oob &oob, const EpOptions &o = {});

}  // namespace sr_test
