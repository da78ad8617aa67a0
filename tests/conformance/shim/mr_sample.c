/* SPDX-License-Identifier: BSD-2-Clause */
// Preloaded into Debian's perftest by perftest_data.sh, to show that the bytes perftest counts
// really move. perftest never looks at its data (it fills its buffers with rand() after
// registering them), so when the first QP goes to RTR, before any traffic, this fills every
// registered region with a pattern of its own seed (SR_SAMPLE_SEED). When a region is
// deregistered it counts, byte by byte, what holds this side's pattern, what holds the peer's
// (SR_SAMPLE_PEER_SEED) and what holds neither, and appends one line to SR_SAMPLE_OUT:
//   mr <length> own <bytes> peer <bytes> other <bytes>   (counted in aligned 8-byte words)
// Plain C with no library of ours: it must not change what it measures.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef ibv_reg_mr  // the header's inline dispatch; the program imports the function

#define MAX_MRS 256

struct region {
    struct ibv_mr *mr;
    uint8_t *addr;
    size_t len;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct region g_regions[MAX_MRS];

static uint64_t seed_from(const char *name) {
    const char *v = getenv(name);
    return v ? strtoull(v, NULL, 0) : 0;
}

// Word `index` of the pattern of `seed`: the index in the low half, a hash of seed and index in
// the high half. Words carry their own identity, so a word is recognised wherever perftest
// placed it (it writes the peer's send area into its own receive area, at another offset), and
// no other content passes for it except by a 1-in-2^32 chance.
static uint64_t pattern_word(uint64_t seed, uint32_t index) {
    uint64_t z = (seed << 32) ^ index;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (z & 0xffffffff00000000ull) | index;
}

static void track(struct ibv_mr *mr, void *addr, size_t len) {
    if (!mr || !addr) return;
    uint8_t *p = addr;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < MAX_MRS; ++i)
        if (!g_regions[i].mr) {
            g_regions[i] = (struct region){mr, p, len};
            break;
        }
    pthread_mutex_unlock(&g_mu);
}

static void fill_once(void) {
    static int filled;
    const uint64_t seed = seed_from("SR_SAMPLE_SEED");
    pthread_mutex_lock(&g_mu);
    if (!filled)
        for (int i = 0; i < MAX_MRS; ++i)
            for (size_t j = 0; g_regions[i].mr && j + 8 <= g_regions[i].len; j += 8) {
                const uint64_t w = pattern_word(seed, (uint32_t)(j / 8));
                memcpy(g_regions[i].addr + j, &w, 8);
            }
    filled = 1;
    pthread_mutex_unlock(&g_mu);
}

static void report(struct ibv_mr *mr) {
    struct region r = {0};
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < MAX_MRS; ++i)
        if (g_regions[i].mr == mr) {
            r = g_regions[i];
            g_regions[i].mr = NULL;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    const char *path = getenv("SR_SAMPLE_OUT");
    if (!r.mr || !path) return;
    const uint64_t own_seed = seed_from("SR_SAMPLE_SEED"),
                   peer_seed = seed_from("SR_SAMPLE_PEER_SEED");
    size_t own = 0, peer = 0, other = 0;
    for (size_t i = 0; i + 8 <= r.len; i += 8) {
        uint64_t w;
        memcpy(&w, r.addr + i, 8);
        if (w == pattern_word(own_seed, (uint32_t)w))
            own += 8;
        else if (w == pattern_word(peer_seed, (uint32_t)w))
            peer += 8;
        else
            other += 8;
    }
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "mr %zu own %zu peer %zu other %zu\n", r.len, own, peer, other);
    fclose(f);
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
    static struct ibv_mr *(*next)(struct ibv_pd *, void *, size_t, int);
    if (!next)
        next = (struct ibv_mr * (*)(struct ibv_pd *, void *, size_t, int))
            dlsym(RTLD_NEXT, "ibv_reg_mr");
    struct ibv_mr *mr = next(pd, addr, length, access);
    track(mr, addr, length);
    return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access) {
    static struct ibv_mr *(*next)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int);
    if (!next)
        next = (struct ibv_mr * (*)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int))
            dlsym(RTLD_NEXT, "ibv_reg_mr_iova2");
    struct ibv_mr *mr = next(pd, addr, length, iova, access);
    track(mr, addr, length);
    return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr) {
    static int (*next)(struct ibv_mr *);
    if (!next) next = (int (*)(struct ibv_mr *))dlsym(RTLD_NEXT, "ibv_dereg_mr");
    report(mr);
    return next(mr);
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask) {
    static int (*next)(struct ibv_qp *, struct ibv_qp_attr *, int);
    if (!next)
        next =
            (int (*)(struct ibv_qp *, struct ibv_qp_attr *, int))dlsym(RTLD_NEXT, "ibv_modify_qp");
    if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) fill_once();
    return next(qp, attr, mask);
}

// In RDMA CM mode (-R) perftest registers and fills its buffers after the QP is connected, so
// nothing above runs in time; its fill is one rand() per byte, so rand() hands out the pattern
// instead, byte by byte, word after word.
int rand(void) {
    static uint64_t n;
    const uint64_t k = __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED);
    const uint64_t w = pattern_word(seed_from("SR_SAMPLE_SEED"), (uint32_t)(k / 8));
    return (int)((w >> (8 * (k % 8))) & 0xff);
}
