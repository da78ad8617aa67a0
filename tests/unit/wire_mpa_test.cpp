// SPDX-License-Identifier: BSD-2-Clause
// MPA request/reply frames (RFC 5044, enhanced mode of RFC 6581): layout, round trip, partial
// input and rejection of malformed frames.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "wire/mpa.h"

namespace softrdma::wire {
namespace {

std::vector<uint8_t> bytes_of(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
    return v;
}

MpaFrame make_frame(bool reply, bool v2, size_t pd_len) {
    MpaFrame f;
    f.reply = reply;
    f.revision = v2 ? 2 : 1;
    f.flags = kMpaFlagCrc | (v2 ? kMpaFlagEnhanced : 0);
    if (v2) {
        f.ird = kMpaV2PeerToPeer | 0x0123;
        f.ord = kMpaV2ReadRtr | 0x0045;
    }
    f.private_data = bytes_of(pd_len, uint8_t(pd_len));
    return f;
}

// A hand-built frame, so that malformed variants can be made field by field.
std::vector<uint8_t> raw_frame(const char *key, uint16_t flags_rev, uint16_t pd_len) {
    std::vector<uint8_t> v(kMpaFixedLen + pd_len, 0xAB);
    std::memcpy(v.data(), key, kMpaKeyLen);
    v[16] = uint8_t(flags_rev >> 8);
    v[17] = uint8_t(flags_rev);
    v[18] = uint8_t(pd_len >> 8);
    v[19] = uint8_t(pd_len);
    return v;
}

MpaDecodeResult decode(const std::vector<uint8_t> &in, bool expect_reply, MpaFrame &out) {
    return decode_mpa_frame(std::span<const uint8_t>(in.data(), in.size()), expect_reply, out);
}

// ---------------------------------------------------------------------------------- layout

TEST(MpaEncode, RequestByteLayoutV1) {
    MpaFrame f;
    f.reply = false;
    f.revision = 1;
    f.flags = kMpaFlagCrc | kMpaFlagMarkers;
    f.private_data = {0xDE, 0xAD, 0xBE};
    const auto out = encode_mpa_frame(f);
    ASSERT_EQ(out.size(), 23u);
    EXPECT_EQ(std::string(out.begin(), out.begin() + 16), "MPA ID Req Frame");
    EXPECT_EQ(out[16], 0xC0);  // M | C
    EXPECT_EQ(out[17], 0x01);  // revision
    EXPECT_EQ(out[18], 0x00);  // pd length, big-endian
    EXPECT_EQ(out[19], 0x03);
    EXPECT_EQ(out[20], 0xDE);
    EXPECT_EQ(out[21], 0xAD);
    EXPECT_EQ(out[22], 0xBE);
}

TEST(MpaEncode, ReplyByteLayoutV2) {
    MpaFrame f;
    f.reply = true;
    f.revision = 2;
    f.flags = kMpaFlagReject | kMpaFlagEnhanced | kMpaFlagSoftrdmaExt;
    f.ird = 0x8102;
    f.ord = 0x4304;
    f.private_data = bytes_of(256, 1);
    const auto out = encode_mpa_frame(f);
    ASSERT_EQ(out.size(), 20u + 4 + 256);
    EXPECT_EQ(std::string(out.begin(), out.begin() + 16), "MPA ID Rep Frame");
    EXPECT_EQ(out[16], 0x34);  // R | S | softrdma extension bit
    EXPECT_EQ(out[17], 0x02);
    // pd_len counts the IRD/ORD words: 260 = 0x0104.
    EXPECT_EQ(out[18], 0x01);
    EXPECT_EQ(out[19], 0x04);
    EXPECT_EQ(out[20], 0x81);
    EXPECT_EQ(out[21], 0x02);
    EXPECT_EQ(out[22], 0x43);
    EXPECT_EQ(out[23], 0x04);
    EXPECT_EQ(std::vector<uint8_t>(out.begin() + 24, out.end()), f.private_data);
}

TEST(MpaEncode, RevisionDoesNotLeakIntoFlags) {
    MpaFrame f;
    f.flags = 0;
    f.revision = 2;
    const auto out = encode_mpa_frame(f);
    ASSERT_EQ(out.size(), kMpaFixedLen);
    EXPECT_EQ(out[16], 0x00);
    EXPECT_EQ(out[17], 0x02);
    EXPECT_EQ(out[18], 0x00);
    EXPECT_EQ(out[19], 0x00);
}

// ---------------------------------------------------------------------------------- round trip

struct RoundTripCase {
    bool reply;
    bool v2;
    size_t pd_len;
};

class MpaRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(MpaRoundTrip, DecodeReturnsWhatWasEncoded) {
    const auto c = GetParam();
    const MpaFrame f = make_frame(c.reply, c.v2, c.pd_len);
    const auto wire = encode_mpa_frame(f);
    ASSERT_EQ(wire.size(), kMpaFixedLen + c.pd_len + (c.v2 ? kMpaV2DataLen : 0));

    // Trailing bytes (the first FPDU) must not be consumed.
    auto in = wire;
    in.push_back(0x99);
    in.push_back(0x98);

    MpaFrame out;
    out.ird = out.ord = 0x7777;  // must be overwritten
    const auto r = decode(in, c.reply, out);
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    EXPECT_EQ(r.needed, wire.size());
    EXPECT_EQ(out.reply, c.reply);
    EXPECT_EQ(out.revision, f.revision);
    EXPECT_EQ(out.flags, f.flags);
    EXPECT_EQ(out.ird, c.v2 ? f.ird : 0);
    EXPECT_EQ(out.ord, c.v2 ? f.ord : 0);
    EXPECT_EQ(out.private_data, f.private_data);
}

INSTANTIATE_TEST_SUITE_P(
    All, MpaRoundTrip,
    ::testing::Values(RoundTripCase{false, false, 0}, RoundTripCase{false, false, 1},
                      RoundTripCase{false, false, 256}, RoundTripCase{false, true, 0},
                      RoundTripCase{false, true, 1}, RoundTripCase{false, true, 256},
                      RoundTripCase{true, false, 0}, RoundTripCase{true, false, 1},
                      RoundTripCase{true, false, 256}, RoundTripCase{true, true, 0},
                      RoundTripCase{true, true, 1}, RoundTripCase{true, true, 256}),
    [](const ::testing::TestParamInfo<RoundTripCase> &i) {
        return std::string(i.param.reply ? "Reply" : "Request") + (i.param.v2 ? "V2" : "V1") +
               "Pd" + std::to_string(i.param.pd_len);
    });

TEST(MpaDecode, AllFlagBitsSurvive) {
    MpaFrame f = make_frame(false, true, 5);
    f.flags =
        kMpaFlagMarkers | kMpaFlagCrc | kMpaFlagReject | kMpaFlagEnhanced | kMpaFlagSoftrdmaExt;
    const auto wire = encode_mpa_frame(f);
    MpaFrame out;
    ASSERT_EQ(decode(wire, false, out).status, DecodeStatus::kOk);
    EXPECT_EQ(out.flags, f.flags);
}

// ---------------------------------------------------------------------------------- partial

TEST(MpaDecode, NeedMoreAtEveryTruncationPoint) {
    for (bool v2 : {false, true}) {
        for (size_t pd : {size_t(0), size_t(1), size_t(256)}) {
            const auto wire = encode_mpa_frame(make_frame(true, v2, pd));
            for (size_t n = 0; n < wire.size(); ++n) {
                MpaFrame out;
                const auto r =
                    decode_mpa_frame(std::span<const uint8_t>(wire.data(), n), true, out);
                ASSERT_EQ(r.status, DecodeStatus::kNeedMore)
                    << "v2 " << v2 << " pd " << pd << " n " << n;
                // Before the length field is in, only the fixed part can be asked for.
                const size_t want = n < kMpaFixedLen ? kMpaFixedLen : wire.size();
                EXPECT_EQ(r.needed, want) << "v2 " << v2 << " pd " << pd << " n " << n;
                EXPECT_GT(r.needed, n);
            }
        }
    }
}

// ---------------------------------------------------------------------------------- malformed

TEST(MpaDecode, RejectsWrongKey) {
    auto wire = encode_mpa_frame(make_frame(false, false, 4));
    wire[3] = 'x';  // "MPAxID Req Frame"
    MpaFrame out;
    EXPECT_EQ(decode(wire, false, out).status, DecodeStatus::kMalformed);

    auto last = encode_mpa_frame(make_frame(false, false, 4));
    last[15] = 'E';  // the key is case-sensitive, all 16 bytes count
    EXPECT_EQ(decode(last, false, out).status, DecodeStatus::kMalformed);
}

TEST(MpaDecode, RejectsRequestKeyWhenReplyExpectedAndViceVersa) {
    const auto req = encode_mpa_frame(make_frame(false, true, 8));
    const auto rep = encode_mpa_frame(make_frame(true, true, 8));
    MpaFrame out;
    EXPECT_EQ(decode(req, true, out).status, DecodeStatus::kMalformed);
    EXPECT_EQ(decode(rep, false, out).status, DecodeStatus::kMalformed);
}

TEST(MpaDecode, RejectsRevisionZeroAndThree) {
    for (uint8_t rev : {uint8_t(0), uint8_t(3), uint8_t(0xFF)}) {
        const auto wire = raw_frame("MPA ID Req Frame", uint16_t(kMpaFlagCrc | rev), 2);
        MpaFrame out;
        EXPECT_EQ(decode(wire, false, out).status, DecodeStatus::kMalformed) << "rev " << int(rev);
    }
    // Sanity: the same frame with revision 1 is fine.
    const auto ok = raw_frame("MPA ID Req Frame", uint16_t(kMpaFlagCrc | 1), 2);
    MpaFrame out;
    EXPECT_EQ(decode(ok, false, out).status, DecodeStatus::kOk);
}

TEST(MpaDecode, PrivateDataLengthLimitV1) {
    MpaFrame out;
    const auto max = raw_frame("MPA ID Rep Frame", 1, 256);
    EXPECT_EQ(decode(max, true, out).status, DecodeStatus::kOk);
    EXPECT_EQ(out.private_data.size(), 256u);

    const auto over = raw_frame("MPA ID Rep Frame", 1, 257);
    EXPECT_EQ(decode(over, true, out).status, DecodeStatus::kMalformed);
}

TEST(MpaDecode, PrivateDataLengthLimitV2) {
    MpaFrame out;
    const auto max = raw_frame("MPA ID Rep Frame", kMpaFlagEnhanced | 2, 260);
    const auto r = decode(max, true, out);
    EXPECT_EQ(r.status, DecodeStatus::kOk);
    EXPECT_EQ(r.needed, 280u);
    EXPECT_EQ(out.private_data.size(), 256u);

    const auto over = raw_frame("MPA ID Rep Frame", kMpaFlagEnhanced | 2, 261);
    EXPECT_EQ(decode(over, true, out).status, DecodeStatus::kMalformed);
}

TEST(MpaDecode, HugeLengthRejectedFromHeaderAlone) {
    // A length no legal frame can have is refused at once, not waited for (64 KiB of buffer).
    auto hdr = raw_frame("MPA ID Req Frame", 2, 0);
    hdr[18] = 0xFF;
    hdr[19] = 0xFF;
    MpaFrame out;
    EXPECT_EQ(decode(hdr, false, out).status, DecodeStatus::kMalformed);
}

TEST(MpaDecode, EnhancedFlagNeedsRoomForIrdOrd) {
    for (uint16_t pd : {uint16_t(0), uint16_t(1), uint16_t(3)}) {
        const auto wire = raw_frame("MPA ID Req Frame", kMpaFlagEnhanced | 2, pd);
        MpaFrame out;
        EXPECT_EQ(decode(wire, false, out).status, DecodeStatus::kMalformed) << "pd " << pd;
    }
    const auto four = raw_frame("MPA ID Req Frame", kMpaFlagEnhanced | 2, 4);
    MpaFrame out;
    ASSERT_EQ(decode(four, false, out).status, DecodeStatus::kOk);
    EXPECT_EQ(out.ird, 0xABAB);
    EXPECT_EQ(out.ord, 0xABAB);
    EXPECT_TRUE(out.private_data.empty());
}

}  // namespace
}  // namespace softrdma::wire
