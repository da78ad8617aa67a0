// SPDX-License-Identifier: BSD-2-Clause
#include "transport/shm_channel.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/tsan_annotations.h"

namespace softrdma::transport {
namespace {

constexpr int kMaxChunks = 32;  // per write call
constexpr uint64_t kMaxRefLen = uint64_t(1) << 30;

void put_le(uint8_t *p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t get_le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
}

// The iovec pieces covering `n` bytes from position (idx, off) of `v`, into `out`.
int slice(const iovec *v, int cnt, int idx, size_t off, uint64_t n, iovec *out, int max) {
    int k = 0;
    for (; idx < cnt && n && k < max; ++idx, off = 0) {
        const size_t take = size_t(std::min<uint64_t>(n, v[idx].iov_len - off));
        if (!take) continue;
        out[k++] = {static_cast<uint8_t *>(v[idx].iov_base) + off, take};
        n -= take;
    }
    return k;
}

}  // namespace

int64_t shm_write_chunks(ShmRing &r, const iovec *v, int cnt, const ShmRefRule &rule) {
    uint64_t want = 0;
    for (int i = 0; i < cnt && i < kMaxChunks; ++i) want += kRefChunk + v[i].iov_len;
    uint64_t room = r.room_for(want);
    uint8_t heads[kMaxChunks][kRefChunk];
    iovec out[2 * kMaxChunks];
    int nout = 0, nchunk = 0;
    int64_t taken = 0;
    for (int i = 0; i < cnt && nchunk < kMaxChunks; ++i) {
        const auto *p = static_cast<const uint8_t *>(v[i].iov_base);
        const size_t len = v[i].iov_len;
        if (!len) continue;
        uint8_t *h = heads[nchunk];
        const bool kept = p >= rule.keep_lo && p < rule.keep_hi;
        if (rule.enabled && !kept && len >= rule.min_len && len <= kMaxRefLen) {
            if (room < kRefChunk) break;
            put_le(h, kChunkRef | uint32_t(len), 4);
            put_le(h + 4, uint64_t(uintptr_t(p)), 8);
            out[nout++] = {h, kRefChunk};
            room -= kRefChunk;
            taken += int64_t(len);
            ++nchunk;
            continue;
        }
        if (room <= kChunkHeader) break;
        const size_t k = size_t(std::min<uint64_t>({len, room - kChunkHeader, kChunkLenMask}));
        put_le(h, uint32_t(k), 4);
        out[nout++] = {h, kChunkHeader};
        out[nout++] = {const_cast<uint8_t *>(p), k};
        room -= kChunkHeader + k;
        taken += int64_t(k);
        ++nchunk;
        if (k < len) break;  // the ring is full
    }
    // Everything fits: the room only grows while we write (the reader only frees space). With
    // nothing to write, the call still checks the reader's index.
    const int64_t n = r.write(out, nout);
    return n < 0 ? -1 : taken;
}

namespace {

// shm_read_chunks without giving the ring space back.
int64_t take_chunks(ShmRing &r, ShmChunkCursor &c, pid_t writer, const iovec *v, int cnt,
                    bool direct) {
    int idx = 0;
    size_t off = 0;
    int64_t total = 0;
    while (idx < cnt) {
        if (!c.left) {
            uint8_t h[kRefChunk];
            // A writer publishes a chunk's header with its body: a short one is corrupt.
            const int hs = r.take_exact(h, kChunkHeader);
            if (hs == 0) break;
            const uint32_t word = uint32_t(get_le(h, 4));
            c.ref = word & kChunkRef;
            c.left = word & kChunkLenMask;
            if (hs < 0 || !c.left) return errno = EPROTO, -1;
            if (c.ref) {
                if (r.take_exact(h + kChunkHeader, 8) != 1) return errno = EPROTO, -1;
                c.addr = get_le(h + kChunkHeader, 8);
            }
        }
        if (c.ref && !direct && total) break;  // see the header: straight to the destination
        iovec part[16];
        const int k = slice(v, cnt, idx, off, c.left, part, 16);
        if (!k) break;  // only empty pieces left
        int64_t got;
        if (c.ref) {
            const iovec remote{reinterpret_cast<void *>(uintptr_t(c.addr)),
                               size_t(std::min<uint64_t>(c.left, SIZE_MAX))};
            AppMemoryAccess app;  // places into registered memory
            got = process_vm_readv(writer, part, unsigned(k), &remote, 1, 0);
            if (got <= 0) return got == 0 ? (errno = EFAULT, -1) : -1;
            c.addr += uint64_t(got);
        } else {
            got = r.take(part, k);
            if (got < 0) return errno = EPROTO, -1;
            if (got == 0) return errno = EPROTO, -1;  // the body was published with its header
        }
        c.left -= uint64_t(got);
        total += got;
        // Advance the destination position.
        for (uint64_t g = uint64_t(got); g && idx < cnt;) {
            const size_t t = size_t(std::min<uint64_t>(g, v[idx].iov_len - off));
            off += t;
            g -= t;
            if (off == v[idx].iov_len) {
                ++idx;
                off = 0;
            }
        }
    }
    return total;
}

}  // namespace

int64_t shm_read_chunks(ShmRing &r, ShmChunkCursor &c, pid_t writer, const iovec *v, int cnt,
                        bool direct) {
    // Headers and bodies are taken one by one; the space goes back to the writer once.
    const int64_t n = take_chunks(r, c, writer, v, cnt, direct);
    r.release();
    return n;
}

}  // namespace softrdma::transport
