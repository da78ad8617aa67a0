// SPDX-License-Identifier: BSD-2-Clause
// DDP/RDMAP segment headers (RFC 5041/5040) and the payload codecs carried in them.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "wire/rdmap.h"

namespace softrdma::wire {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr RdmapOp kAllOps[] = {
    RdmapOp::kWrite,     RdmapOp::kReadRequest, RdmapOp::kReadResponse,  RdmapOp::kSend,
    RdmapOp::kSendInv,   RdmapOp::kSendSe,      RdmapOp::kSendSeInv,     RdmapOp::kTerminate,
    RdmapOp::kImmediate, RdmapOp::kImmediateSe, RdmapOp::kAtomicRequest, RdmapOp::kAtomicResponse,
    RdmapOp::kSendImm,   RdmapOp::kSendImmSe,   RdmapOp::kControl,
};

Bytes encode(const SegmentHeader &h) {
    Bytes out(kMaxHeaderLen + 8, 0xEE);  // slack shows a header never writes past its length
    const size_t n = encode_segment_header(h, out.data());
    EXPECT_EQ(n, header_len(h.op));
    for (size_t i = n; i < out.size(); ++i) EXPECT_EQ(out[i], 0xEE) << "wrote past header at " << i;
    out.resize(n);
    return out;
}

SegmentDecodeResult decode(const Bytes &in, SegmentHeader &out) {
    return decode_segment_header(std::span<const uint8_t>(in.data(), in.size()), out);
}

// A header-sized buffer with the given control bytes and ULPDU length; the rest zero.
Bytes raw(uint16_t ulpdu, uint8_t ddp, uint8_t rdmap, size_t len = kMaxHeaderLen) {
    Bytes v(len, 0);
    v[0] = uint8_t(ulpdu >> 8);
    v[1] = uint8_t(ulpdu);
    v[2] = ddp;
    v[3] = rdmap;
    return v;
}

// ---------------------------------------------------------------------------------- opcodes

TEST(Rdmap, OpcodeClassification) {
    for (RdmapOp op : kAllOps) {
        const bool tagged = op == RdmapOp::kWrite || op == RdmapOp::kReadResponse;
        EXPECT_EQ(op_is_tagged(op), tagged) << int(op);
        EXPECT_EQ(header_len(op), tagged ? 16u : 20u) << int(op);
        EXPECT_EQ(op_is_extension(op), uint8_t(op) >= 8) << int(op);
    }
    // RFC 5040 / RFC 7306 numbering, which siw and iWARP NICs use on the wire.
    EXPECT_EQ(uint8_t(RdmapOp::kWrite), 0x0);
    EXPECT_EQ(uint8_t(RdmapOp::kReadRequest), 0x1);
    EXPECT_EQ(uint8_t(RdmapOp::kReadResponse), 0x2);
    EXPECT_EQ(uint8_t(RdmapOp::kSend), 0x3);
    EXPECT_EQ(uint8_t(RdmapOp::kSendInv), 0x4);
    EXPECT_EQ(uint8_t(RdmapOp::kSendSe), 0x5);
    EXPECT_EQ(uint8_t(RdmapOp::kSendSeInv), 0x6);
    EXPECT_EQ(uint8_t(RdmapOp::kTerminate), 0x7);
    EXPECT_EQ(uint8_t(RdmapOp::kImmediate), 0x8);
    EXPECT_EQ(uint8_t(RdmapOp::kImmediateSe), 0x9);
    EXPECT_EQ(uint8_t(RdmapOp::kAtomicRequest), 0xA);
    EXPECT_EQ(uint8_t(RdmapOp::kAtomicResponse), 0xB);
    // Untagged queue numbers of RFC 5040 §5.1 (0-2) and RFC 7306 (3-4).
    EXPECT_EQ(kQnSend, 0u);
    EXPECT_EQ(kQnReadRequest, 1u);
    EXPECT_EQ(kQnTerminate, 2u);
    EXPECT_EQ(kQnAtomicRequest, 3u);
    EXPECT_EQ(kQnAtomicResponse, 4u);
}

TEST(Rdmap, PadLenMakesFpduMultipleOfFour) {
    EXPECT_EQ(pad_len(kUntaggedHeaderLen, 0), 0u);
    EXPECT_EQ(pad_len(kUntaggedHeaderLen, 1), 3u);
    EXPECT_EQ(pad_len(kUntaggedHeaderLen, 2), 2u);
    EXPECT_EQ(pad_len(kUntaggedHeaderLen, 3), 1u);
    EXPECT_EQ(pad_len(kUntaggedHeaderLen, 4), 0u);
    EXPECT_EQ(pad_len(kTaggedHeaderLen, 5), 3u);
    EXPECT_EQ(pad_len(kTaggedHeaderLen, kMaxSegmentPayload), 0u);
    for (size_t hl : {kTaggedHeaderLen, kUntaggedHeaderLen}) {
        for (size_t p = 0; p < 64; ++p) {
            const size_t pad = pad_len(hl, p);
            EXPECT_LT(pad, 4u);
            EXPECT_EQ((hl + p + pad) % 4, 0u) << hl << "+" << p;
        }
    }
}

// ---------------------------------------------------------------------------------- exact bytes

TEST(RdmapEncode, TaggedWriteBytes) {
    SegmentHeader h;
    h.op = RdmapOp::kWrite;
    h.last = true;
    h.payload_len = 100;
    h.stag = 0x11223344;
    h.to = 0x0102030405060708ull;
    const Bytes expect = {0x00, 0x72,  // ULPDU length = 16 - 2 + 100 = 114
                          0xC1,        // T | L | DV=1
                          0x40,        // RV=1, opcode 0
                          0x11, 0x22, 0x33, 0x44, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    EXPECT_EQ(encode(h), expect);
}

TEST(RdmapEncode, TaggedNotLastBytes) {
    SegmentHeader h;
    h.op = RdmapOp::kReadResponse;
    h.last = false;
    h.payload_len = 0;
    h.stag = 0xA0B0C0D0;
    h.to = 0xFFFFFFFF00000001ull;
    const Bytes expect = {0x00, 0x0E, 0x81, 0x42, 0xA0, 0xB0, 0xC0, 0xD0,
                          0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01};
    EXPECT_EQ(encode(h), expect);
}

TEST(RdmapEncode, UntaggedSendInvBytes) {
    SegmentHeader h;
    h.op = RdmapOp::kSendInv;
    h.last = true;
    h.payload_len = 0x0203;
    h.ulp = 0xCAFEBABE;
    h.qn = kQnSend;
    h.msn = 0x01020304;
    h.mo = 0x00001000;
    // ULPDU length = 20 - 2 + 0x203 = 0x215.
    const Bytes expect = {0x02, 0x15, 0x41, 0x44, 0xCA, 0xFE, 0xBA, 0xBE, 0x00, 0x00,
                          0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x10, 0x00};
    EXPECT_EQ(encode(h), expect);
}

TEST(RdmapEncode, UntaggedNotLastAndExtensionOpcode) {
    SegmentHeader h;
    h.op = RdmapOp::kControl;
    h.last = false;
    h.payload_len = kControlLen;
    h.qn = kQnControl;
    h.msn = 7;
    const Bytes out = encode(h);
    ASSERT_EQ(out.size(), 20u);
    EXPECT_EQ(out[0], 0x00);
    EXPECT_EQ(out[1], 18 + 12);
    EXPECT_EQ(out[2], 0x01);  // untagged, not last, DV=1
    EXPECT_EQ(out[3], 0x4E);
    EXPECT_EQ(out[11], 5);
    EXPECT_EQ(out[15], 7);
}

// ---------------------------------------------------------------------------------- round trip

TEST(RdmapDecode, RoundTripEveryOpcode) {
    for (RdmapOp op : kAllOps) {
        for (bool last : {false, true}) {
            for (uint16_t plen :
                 {uint16_t(0), uint16_t(1), uint16_t(4093), uint16_t(kMaxSegmentPayload)}) {
                SegmentHeader h;
                h.op = op;
                h.last = last;
                h.payload_len = plen;
                if (op_is_tagged(op)) {
                    h.stag = 0x89ABCDEF;
                    h.to = 0xFEDCBA9876543210ull;
                } else {
                    h.ulp = 0x13579BDF;
                    h.qn = 0x2468ACE0;
                    h.msn = 0xFFFFFFFF;
                    h.mo = 0x80000001;
                }
                Bytes in = encode(h);
                in.resize(in.size() + 3, 0x5A);  // payload bytes following must be ignored
                SegmentHeader out;
                // Stale fields in `out` must not survive.
                out.stag = out.ulp = out.qn = out.msn = out.mo = 0xDEAD;
                out.to = 0xDEAD;
                const auto r = decode(in, out);
                ASSERT_EQ(r.status, DecodeStatus::kOk) << int(op);
                EXPECT_EQ(r.header_len, header_len(op));
                EXPECT_EQ(out.op, op);
                EXPECT_EQ(out.last, last);
                EXPECT_EQ(out.payload_len, plen);
                if (op_is_tagged(op)) {
                    EXPECT_EQ(out.stag, h.stag);
                    EXPECT_EQ(out.to, h.to);
                    EXPECT_EQ(out.ulp, 0u);
                    EXPECT_EQ(out.qn, 0u);
                    EXPECT_EQ(out.msn, 0u);
                    EXPECT_EQ(out.mo, 0u);
                } else {
                    EXPECT_EQ(out.ulp, h.ulp);
                    EXPECT_EQ(out.qn, h.qn);
                    EXPECT_EQ(out.msn, h.msn);
                    EXPECT_EQ(out.mo, h.mo);
                    EXPECT_EQ(out.stag, 0u);
                    EXPECT_EQ(out.to, 0u);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------- partial

TEST(RdmapDecode, NeedMoreBelowFourBytes) {
    const Bytes full = raw(18, 0x41, 0x43);
    for (size_t n = 0; n < 4; ++n) {
        SegmentHeader out;
        const auto r = decode_segment_header(std::span<const uint8_t>(full.data(), n), out);
        EXPECT_EQ(r.status, DecodeStatus::kNeedMore) << n;
        EXPECT_EQ(r.header_len, 4u) << n;
    }
}

TEST(RdmapDecode, NeedMoreForPartialHeader) {
    for (RdmapOp op : kAllOps) {
        SegmentHeader h;
        h.op = op;
        h.payload_len = 9;
        const Bytes full = encode(h);
        for (size_t n = 4; n < full.size(); ++n) {
            SegmentHeader out;
            const auto r = decode_segment_header(std::span<const uint8_t>(full.data(), n), out);
            EXPECT_EQ(r.status, DecodeStatus::kNeedMore) << int(op) << " n " << n;
            EXPECT_EQ(r.header_len, full.size()) << int(op) << " n " << n;
        }
    }
}

// ---------------------------------------------------------------------------------- malformed

TEST(RdmapDecode, RejectsBadDdpVersion) {
    for (uint8_t dv : {uint8_t(0), uint8_t(2), uint8_t(3)}) {
        SegmentHeader out;
        EXPECT_EQ(decode(raw(18, uint8_t(0x40 | dv), 0x43), out).status, DecodeStatus::kMalformed)
            << int(dv);
    }
}

TEST(RdmapDecode, RejectsDdpReservedBits) {
    for (uint8_t bit : {uint8_t(0x04), uint8_t(0x08), uint8_t(0x10), uint8_t(0x20)}) {
        SegmentHeader out;
        EXPECT_EQ(decode(raw(18, uint8_t(0x41 | bit), 0x43), out).status, DecodeStatus::kMalformed)
            << int(bit);
    }
}

TEST(RdmapDecode, RejectsBadRdmapVersion) {
    for (uint8_t rv : {uint8_t(0x00), uint8_t(0x80), uint8_t(0xC0)}) {
        SegmentHeader out;
        EXPECT_EQ(decode(raw(18, 0x41, uint8_t(rv | 0x3)), out).status, DecodeStatus::kMalformed)
            << int(rv);
    }
    for (uint8_t rsvd : {uint8_t(0x10), uint8_t(0x20)}) {
        SegmentHeader out;
        EXPECT_EQ(decode(raw(18, 0x41, uint8_t(0x40 | rsvd | 0x3)), out).status,
                  DecodeStatus::kMalformed)
            << int(rsvd);
    }
}

TEST(RdmapDecode, RejectsOpcodeF) {
    SegmentHeader out;
    EXPECT_EQ(decode(raw(18, 0x41, 0x4F), out).status, DecodeStatus::kMalformed);
    EXPECT_EQ(decode(raw(14, 0xC1, 0x4F), out).status, DecodeStatus::kMalformed);
}

TEST(RdmapDecode, RejectsTaggedBitMismatch) {
    for (RdmapOp op : kAllOps) {
        const bool tagged = op_is_tagged(op);
        // The wrong T bit, with a length valid for either header shape.
        const uint8_t ddp = tagged ? 0x41 : 0xC1;
        SegmentHeader out;
        EXPECT_EQ(decode(raw(64, ddp, uint8_t(0x40 | uint8_t(op))), out).status,
                  DecodeStatus::kMalformed)
            << int(op);
    }
}

TEST(RdmapDecode, MalformedDetectedFromFirstFourBytes) {
    // No need to wait for the rest of a header whose control bytes are already wrong.
    SegmentHeader out;
    EXPECT_EQ(decode(raw(18, 0x41, 0x4F, 4), out).status, DecodeStatus::kMalformed);
    EXPECT_EQ(decode(raw(18, 0xC1, 0x43, 4), out).status, DecodeStatus::kMalformed);
}

TEST(RdmapDecode, RejectsUlpduShorterThanHeader) {
    SegmentHeader out;
    // Untagged: ULPDU must be >= 18 (header minus the MPA length field).
    for (uint16_t u : {uint16_t(0), uint16_t(1), uint16_t(14), uint16_t(17)}) {
        EXPECT_EQ(decode(raw(u, 0x41, 0x43), out).status, DecodeStatus::kMalformed) << u;
    }
    auto r = decode(raw(18, 0x41, 0x43), out);
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    EXPECT_EQ(out.payload_len, 0u);
    // Tagged: ULPDU must be >= 14.
    for (uint16_t u : {uint16_t(0), uint16_t(13)}) {
        EXPECT_EQ(decode(raw(u, 0xC1, 0x40), out).status, DecodeStatus::kMalformed) << u;
    }
    r = decode(raw(14, 0xC1, 0x40), out);
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    EXPECT_EQ(r.header_len, 16u);
    EXPECT_EQ(out.payload_len, 0u);
}

TEST(RdmapDecode, MaxUlpduLength) {
    SegmentHeader out;
    const auto r = decode(raw(0xFFFF, 0x41, 0x43), out);
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    EXPECT_EQ(out.payload_len, 0xFFFF + 2 - 20);
}

// ---------------------------------------------------------------------------------- payloads

TEST(RdmapPayload, ReadRequestBytesAndRoundTrip) {
    const ReadRequest r{0x11111111, 0x2222222233333333ull, 0x44444444, 0x55555555,
                        0x6666666677777777ull};
    std::array<uint8_t, kReadRequestLen + 4> buf;
    buf.fill(0xEE);
    encode_read_request(r, buf.data());
    const std::array<uint8_t, kReadRequestLen> expect = {
        0x11, 0x11, 0x11, 0x11,                          // sink STag
        0x22, 0x22, 0x22, 0x22, 0x33, 0x33, 0x33, 0x33,  // sink TO
        0x44, 0x44, 0x44, 0x44,                          // RDMA read message size
        0x55, 0x55, 0x55, 0x55,                          // source STag
        0x66, 0x66, 0x66, 0x66, 0x77, 0x77, 0x77, 0x77,  // source TO
    };
    EXPECT_EQ(kReadRequestLen, 28u);
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), buf.begin()));
    EXPECT_EQ(buf[28], 0xEE);

    const ReadRequest d = decode_read_request(buf.data());
    EXPECT_EQ(d.sink_stag, r.sink_stag);
    EXPECT_EQ(d.sink_to, r.sink_to);
    EXPECT_EQ(d.length, r.length);
    EXPECT_EQ(d.src_stag, r.src_stag);
    EXPECT_EQ(d.src_to, r.src_to);
}

TEST(RdmapPayload, AtomicRequestRoundTrip) {
    for (AtomicOp op : {AtomicOp::kFetchAdd, AtomicOp::kCompareSwap, AtomicOp::kWrite}) {
        const AtomicRequest a{op, 0xA1B2C3D4, 0x1000200030004000ull, 0x0102030405060708ull,
                              0xF0E0D0C0B0A09080ull};
        std::array<uint8_t, kAtomicRequestLen> buf{};
        encode_atomic_request(a, buf.data());
        EXPECT_EQ(buf[3], uint8_t(op));
        EXPECT_EQ(buf[4], 0xA1);
        EXPECT_EQ(buf[16], 0x01);
        EXPECT_EQ(buf[31], 0x80);
        AtomicRequest d{};
        ASSERT_TRUE(decode_atomic_request(buf.data(), d));
        EXPECT_EQ(d.op, a.op);
        EXPECT_EQ(d.stag, a.stag);
        EXPECT_EQ(d.to, a.to);
        EXPECT_EQ(d.add_or_swap, a.add_or_swap);
        EXPECT_EQ(d.compare, a.compare);
    }
}

TEST(RdmapPayload, AtomicRequestRejectsUnknownOp) {
    for (uint32_t op : {3u, 4u, 0x100u, 0xFFFFFFFFu}) {
        std::array<uint8_t, kAtomicRequestLen> buf{};
        buf[0] = uint8_t(op >> 24);
        buf[1] = uint8_t(op >> 16);
        buf[2] = uint8_t(op >> 8);
        buf[3] = uint8_t(op);
        AtomicRequest d{AtomicOp::kFetchAdd, 7, 7, 7, 7};
        EXPECT_FALSE(decode_atomic_request(buf.data(), d)) << op;
        EXPECT_EQ(d.stag, 7u);  // untouched on failure
    }
}

TEST(RdmapPayload, ImmediateRoundTrip) {
    const ImmediatePayload p{0x12345678, 0x9ABCDEF0};
    std::array<uint8_t, kImmediateLen> buf{};
    encode_immediate(p, buf.data());
    const std::array<uint8_t, 8> expect = {0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0};
    EXPECT_EQ(buf, expect);
    const ImmediatePayload d = decode_immediate(buf.data());
    EXPECT_EQ(d.imm, p.imm);
    EXPECT_EQ(d.write_len, p.write_len);
}

TEST(RdmapPayload, ControlRoundTripAllTypes) {
    for (ControlType t :
         {ControlType::kAck, ControlType::kNak, ControlType::kRnrNak, ControlType::kResync,
          ControlType::kCredits, ControlType::kRtu, ControlType::kXrcSrq, ControlType::kShmOffer,
          ControlType::kShmAccept, ControlType::kShmDecline, ControlType::kShmSwitch}) {
        const ControlPayload c{t, 0x00ABCDEF, 0x12345678};
        std::array<uint8_t, kControlLen> buf;
        buf.fill(0xFF);
        encode_control(c, buf.data());
        const std::array<uint8_t, kControlLen> expect = {uint8_t(t), 0,    0,    0,    0x00, 0xAB,
                                                         0xCD,       0xEF, 0x12, 0x34, 0x56, 0x78};
        EXPECT_EQ(buf, expect);
        ControlPayload d{};
        ASSERT_TRUE(decode_control(buf.data(), d));
        EXPECT_EQ(d.type, t);
        EXPECT_EQ(d.seq, c.seq);
        EXPECT_EQ(d.arg, c.arg);
    }
}

TEST(RdmapPayload, ControlRejectsUnknownType) {
    for (uint8_t t : {uint8_t(0), uint8_t(12), uint8_t(0x7F), uint8_t(0xFF)}) {
        std::array<uint8_t, kControlLen> buf{};
        buf[0] = t;
        ControlPayload d{ControlType::kAck, 9, 9};
        EXPECT_FALSE(decode_control(buf.data(), d)) << int(t);
        EXPECT_EQ(d.seq, 9u);
    }
}

TEST(RdmapPayload, TerminateBytesAndRoundTrip) {
    const TerminatePayload t{TermLayer::kRdmap, kTermEtypeRemoteProtection, kTermEcodeBaseBounds};
    std::array<uint8_t, kTerminateLen> buf;
    buf.fill(0xFF);
    encode_terminate(t, buf.data());
    // Layer in the high nibble, error type in the low one, then the code; no headers echoed.
    const std::array<uint8_t, 4> expect = {0x01, 0x01, 0x00, 0x00};
    EXPECT_EQ(buf, expect);

    for (TermLayer layer : {TermLayer::kRdmap, TermLayer::kDdp, TermLayer::kMpa}) {
        for (uint8_t etype = 0; etype < 16; ++etype) {
            const TerminatePayload in{layer, etype, uint8_t(0xF0 | etype)};
            encode_terminate(in, buf.data());
            EXPECT_EQ(buf[0], uint8_t(uint8_t(layer) << 4 | etype));
            const TerminatePayload d = decode_terminate(buf.data());
            EXPECT_EQ(d.layer, layer);
            EXPECT_EQ(d.etype, etype);
            EXPECT_EQ(d.ecode, in.ecode);
        }
    }
}

// The codes a peer (siw, an iWARP NIC) interprets: RFC 5040 §7.1 and Linux siw's iwarp.h
// (enum rdmap_etype / rdmap_ecode) give layer RDMAP = 0, DDP = 1, LLP = 2; error types
// 0 catastrophic, 1 remote protection, 2 remote operation; codes 0x00 invalid STag, 0x01 base
// or bounds, 0x02 access rights, 0x06 unexpected opcode, 0xFF unspecified.
TEST(RdmapPayload, TerminateCodesMatchRfc5040) {
    EXPECT_EQ(uint8_t(TermLayer::kRdmap), 0);
    EXPECT_EQ(uint8_t(TermLayer::kDdp), 1);
    EXPECT_EQ(uint8_t(TermLayer::kMpa), 2);
    EXPECT_EQ(int(kTermEtypeRemoteProtection), 0x1);
    EXPECT_EQ(int(kTermEtypeRemoteOperation), 0x2);
    EXPECT_EQ(int(kTermEcodeInvalidStag), 0x00);
    EXPECT_EQ(int(kTermEcodeBaseBounds), 0x01);
    EXPECT_EQ(int(kTermEcodeAccessRights), 0x02);
    EXPECT_EQ(int(kTermEcodeInvalidOpcode), 0x06);  // RDMAP_ECODE_OPCODE; 0x02 = access rights
    EXPECT_EQ(int(kTermEcodeUnspecified), 0xFF);
}

}  // namespace
}  // namespace softrdma::wire

namespace softrdma::wire {

// The TERMINATE for a header the decoder refuses names the layer and error RFC 5040/5041 give.
TEST(RdmapPayload, TerminateForBadHeader) {
    auto term = [](std::initializer_list<uint8_t> b) {
        const std::vector<uint8_t> v(b);
        SegmentHeader h;
        EXPECT_EQ(decode_segment_header(std::span<const uint8_t>(v.data(), v.size()), h).status,
                  DecodeStatus::kMalformed);
        return terminate_for_bad_header(std::span<const uint8_t>(v.data(), v.size()));
    };
    auto is = [](TerminatePayload t, TermLayer l, uint8_t et, uint8_t ec) {
        return t.layer == l && t.etype == et && t.ecode == ec;
    };
    EXPECT_TRUE(is(term({0, 0x12, 0xc2, 0x40}), TermLayer::kDdp, 1, 0x04));    // tagged, DDP v2
    EXPECT_TRUE(is(term({0, 0x12, 0x40, 0x43}), TermLayer::kDdp, 2, 0x06));    // untagged, DDP v0
    EXPECT_TRUE(is(term({0, 0x12, 0x41, 0x83}), TermLayer::kRdmap, 2, 0x05));  // RDMAP v2
    EXPECT_TRUE(is(term({0, 0x12, 0x41, 0x4f}), TermLayer::kRdmap, 2, 0x06));  // opcode 0xF
    EXPECT_TRUE(is(term({0, 0x12, 0x41, 0x40}), TermLayer::kRdmap, 2, 0x06));  // WRITE untagged
    EXPECT_TRUE(is(term({0, 0x05, 0xc1, 0x40}), TermLayer::kRdmap, 2, 0xff));  // too short
    EXPECT_TRUE(is(term({0, 0x12, 0x45, 0x43}), TermLayer::kRdmap, 2, 0xff));  // reserved bits
}

}  // namespace softrdma::wire

// Debug lines name TERMINATE and NAK causes in words (RFC 5040/5041 names).
TEST(WireRdmap, TerminateAndNakInWords) {
    using namespace softrdma::wire;
    EXPECT_EQ(describe_terminate({TermLayer::kRdmap, kTermEtypeRemoteProtection,
                                  kTermEcodeBaseBounds}),
              "RDMAP remote protection error: base or bounds violation");
    EXPECT_EQ(describe_terminate({TermLayer::kRdmap, kTermEtypeRemoteOperation,
                                  kTermEcodeInvalidOpcode}),
              "RDMAP remote operation error: unexpected opcode");
    EXPECT_EQ(describe_terminate({TermLayer::kDdp, 2, kTermEcodeDdpUntaggedVersion}),
              "DDP untagged buffer error: invalid DDP version");
    EXPECT_EQ(describe_terminate({TermLayer::kMpa, 0, kTermEcodeMpaCrc}),
              "MPA framing error: CRC error");
    EXPECT_EQ(describe_terminate({TermLayer::kRdmap, kTermEtypeRemoteOperation,
                                  kTermEcodeUnspecified}),
              "RDMAP remote operation error: unspecified");
    EXPECT_EQ(describe_terminate({TermLayer::kRdmap, 1, 0x42}),
              "RDMAP remote protection error: code 0x42");
    EXPECT_STREQ(nak_name(NakCode::kRemoteAccess), "remote access error");
    EXPECT_STREQ(nak_name(NakCode::kInvalidRequest), "invalid request");
}
