// SPDX-License-Identifier: BSD-2-Clause
// Small deterministic fuzz: the decoders see every prefix of valid frames, mutated frames and
// random bytes. They must never read past the input (run under ASan to see it), and what they
// report must be self-consistent.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "wire/mpa.h"
#include "wire/qp_hello.h"
#include "wire/rdmap.h"

namespace softrdma::wire {
namespace {

using Bytes = std::vector<uint8_t>;

// Each prefix is copied into a buffer of exactly its size, so ASan flags any over-read.
void check_segment(const Bytes &src, size_t n) {
    const Bytes in(src.begin(), src.begin() + long(n));
    SegmentHeader h;
    const auto r = decode_segment_header(std::span<const uint8_t>(in.data(), in.size()), h);
    switch (r.status) {
        case DecodeStatus::kOk:
            ASSERT_LE(r.header_len, in.size());
            ASSERT_EQ(r.header_len, header_len(h.op));
            ASSERT_NE(uint8_t(h.op), 0xF);
            // ULPDU length = header (without the MPA length field) + payload.
            ASSERT_EQ(size_t(in[0] << 8 | in[1]) + kMpaLenField, r.header_len + h.payload_len);
            break;
        case DecodeStatus::kNeedMore:
            ASSERT_GT(r.header_len, in.size());
            ASSERT_TRUE(r.header_len == 4 || r.header_len == kTaggedHeaderLen ||
                        r.header_len == kUntaggedHeaderLen);
            break;
        case DecodeStatus::kMalformed:
            break;
    }
}

void check_mpa(const Bytes &src, size_t n, bool expect_reply) {
    const Bytes in(src.begin(), src.begin() + long(n));
    MpaFrame f;
    const auto r =
        decode_mpa_frame(std::span<const uint8_t>(in.data(), in.size()), expect_reply, f);
    switch (r.status) {
        case DecodeStatus::kOk:
            ASSERT_LE(r.needed, in.size());
            ASSERT_GE(r.needed, kMpaFixedLen);
            ASSERT_LE(f.private_data.size(), kMpaMaxPrivateData);
            ASSERT_EQ(r.needed, kMpaFixedLen + f.private_data.size() +
                                    ((f.flags & kMpaFlagEnhanced) ? kMpaV2DataLen : 0));
            ASSERT_TRUE(f.revision == 1 || f.revision == 2);
            ASSERT_EQ(f.reply, expect_reply);
            break;
        case DecodeStatus::kNeedMore:
            ASSERT_GT(r.needed, in.size());
            ASSERT_LE(r.needed, kMpaFixedLen + kMpaMaxPrivateData + kMpaV2DataLen);
            break;
        case DecodeStatus::kMalformed:
            break;
    }
}

std::vector<Bytes> valid_segments() {
    std::vector<Bytes> out;
    for (int op = 0; op <= 0xE; ++op) {
        for (uint16_t plen : {uint16_t(0), uint16_t(3), uint16_t(4096)}) {
            SegmentHeader h;
            h.op = RdmapOp(op);
            h.last = plen != 3;
            h.payload_len = plen;
            h.stag = 0x01020304;
            h.to = 0x1122334455667788ull;
            h.ulp = 9;
            h.qn = 1;
            h.msn = 2;
            h.mo = 3;
            Bytes b(header_len(h.op));
            encode_segment_header(h, b.data());
            out.push_back(b);
        }
    }
    return out;
}

std::vector<std::pair<Bytes, bool>> valid_mpa_frames() {
    std::vector<std::pair<Bytes, bool>> out;
    for (bool reply : {false, true}) {
        for (bool v2 : {false, true}) {
            for (size_t pd : {size_t(0), size_t(1), size_t(17), size_t(256)}) {
                MpaFrame f;
                f.reply = reply;
                f.revision = v2 ? 2 : 1;
                f.flags = v2 ? kMpaFlagEnhanced : 0;
                f.ird = 3;
                f.ord = 4;
                f.private_data.assign(pd, 0x5A);
                out.emplace_back(encode_mpa_frame(f), reply);
            }
        }
    }
    return out;
}

TEST(WireFuzz, EveryPrefixOfValidSegments) {
    for (const Bytes &b : valid_segments()) {
        for (size_t n = 0; n <= b.size(); ++n) {
            check_segment(b, n);
            if (HasFatalFailure()) return;
        }
        SegmentHeader h;
        EXPECT_EQ(decode_segment_header(std::span<const uint8_t>(b.data(), b.size()), h).status,
                  DecodeStatus::kOk);
    }
}

TEST(WireFuzz, EveryPrefixOfValidMpaFrames) {
    for (const auto &[b, reply] : valid_mpa_frames()) {
        for (size_t n = 0; n <= b.size(); ++n) {
            check_mpa(b, n, reply);
            check_mpa(b, n, !reply);  // the other key: never kOk past the key
            if (HasFatalFailure()) return;
        }
        MpaFrame f;
        EXPECT_EQ(decode_mpa_frame(std::span<const uint8_t>(b.data(), b.size()), reply, f).status,
                  DecodeStatus::kOk);
    }
}

TEST(WireFuzz, RandomBytes) {
    std::mt19937 rng(0x5EED);
    for (int iter = 0; iter < 4000; ++iter) {
        const size_t len = rng() % 300;
        Bytes b(len);
        for (auto &x : b) x = uint8_t(rng());
        // Bias some inputs toward the valid control bytes / MPA key so decoding gets deep.
        if (iter % 3 == 1 && len >= 4) {
            b[2] = uint8_t((b[2] & 0xC0) | 0x01);
            b[3] = uint8_t(0x40 | (b[3] & 0x0F));
        }
        if (iter % 3 == 2 && len >= 16) std::memcpy(b.data(), "MPA ID Rep Frame", 16);
        check_segment(b, b.size());
        check_mpa(b, b.size(), true);
        check_mpa(b, b.size(), false);
        if (HasFatalFailure()) return;
    }
}

TEST(WireFuzz, MutatedValidFrames) {
    std::mt19937 rng(42);
    const auto segs = valid_segments();
    const auto frames = valid_mpa_frames();
    for (int iter = 0; iter < 3000; ++iter) {
        Bytes s = segs[rng() % segs.size()];
        s[rng() % s.size()] ^= uint8_t(1u << (rng() % 8));
        check_segment(s, s.size());

        auto [m, reply] = frames[rng() % frames.size()];
        // Hit the header fields (flags, revision, length) more often than the payload.
        const size_t pos = (iter % 2) ? 16 + rng() % 4 : rng() % m.size();
        m[pos] ^= uint8_t(1u << (rng() % 8));
        check_mpa(m, m.size(), reply);

        Bytes hello(kQpHelloLen);
        for (auto &x : hello) x = uint8_t(rng());
        QpHello h;
        (void)decode_qp_hello(std::span<const uint8_t>(hello.data(), hello.size()), h);
        if (HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace softrdma::wire
