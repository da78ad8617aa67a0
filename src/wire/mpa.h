// SPDX-License-Identifier: BSD-2-Clause
// MPA (RFC 5044, enhanced mode of RFC 6581): the connection-setup frames exchanged once after
// TCP connect, before any FPDU. Pure encode/decode, no I/O.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace softrdma::wire {

constexpr size_t kMpaKeyLen = 16;
constexpr size_t kMpaFixedLen = 20;         // key + flags + revision + private-data length
constexpr size_t kMpaV2DataLen = 4;         // IRD + ORD words at the front of private data
constexpr size_t kMpaMaxPrivateData = 256;  // what Linux siw accepts (RDMA_MAX_PRIVATE_DATA)

// Flag bits of the 16-bit word that follows the key.
enum : uint16_t {
    kMpaFlagMarkers = 0x8000,
    kMpaFlagCrc = 0x4000,
    kMpaFlagReject = 0x2000,
    kMpaFlagEnhanced = 0x1000,
    // Reserved by RFC 5044; siw uses 0x0800. We claim 0x0400 to say "I speak the softrdma
    // extensions" (docs/wire.md §1.3, §2.2). A peer that does not set it gets plain RDMAP.
    kMpaFlagSoftrdmaExt = 0x0400,
    // With the extensions: "I can move this connection's frames to shared memory when we
    // are on one host" (docs/wire.md §3.6). Set in a reply only if the request set it.
    kMpaFlagSoftrdmaShm = 0x0200,
};

// Enhanced-mode (v2) IRD/ORD words.
enum : uint16_t {
    kMpaV2PeerToPeer = 0x8000,     // in IRD
    kMpaV2ZeroLengthRtr = 0x4000,  // in IRD
    kMpaV2WriteRtr = 0x8000,       // in ORD
    kMpaV2ReadRtr = 0x4000,        // in ORD
    kMpaV2IrdOrdMask = 0x3fff,
};

struct MpaFrame {
    bool reply = false;
    uint16_t flags = 0;  // kMpaFlag*
    uint8_t revision = 2;
    // Valid when flags has kMpaFlagEnhanced.
    uint16_t ird = 0;
    uint16_t ord = 0;
    // The ULP's private data (after the v2 words, when present).
    std::vector<uint8_t> private_data;
};

enum class DecodeStatus { kOk, kNeedMore, kMalformed };

struct MpaDecodeResult {
    DecodeStatus status;
    size_t needed;  // kNeedMore: total bytes required; kOk: bytes consumed
};

std::vector<uint8_t> encode_mpa_frame(const MpaFrame &f);

// `expect_reply` selects which key is legal. The codec reports the flags it saw; markers are
// never used by us (a peer asking for them still gets a marker-less stream).
MpaDecodeResult decode_mpa_frame(std::span<const uint8_t> in, bool expect_reply, MpaFrame &out);

}  // namespace softrdma::wire
