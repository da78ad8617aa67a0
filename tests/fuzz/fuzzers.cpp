// SPDX-License-Identifier: BSD-2-Clause
// libFuzzer targets for every decoder that reads bytes from the network, one target per binary
// (chosen by SR_FUZZ_<NAME> at compile time). Each checks that a decoder never reads outside its
// input (ASan), and that what it accepts is self-consistent (it re-encodes to the same meaning).
// Run by scripts/fuzz.sh; seed corpora in tests/fuzz/corpus/<name>/.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "transport/fpdu_stream.h"
#include "wire/mpa.h"
#include "wire/qp_hello.h"
#include "wire/rdmap.h"
#include "wire/rsocket_msg.h"
#include "wire/sidr.h"
#include "wire/eth_frame.h"
#include "wire/ud_header.h"

using namespace softrdma;
using Span = std::span<const uint8_t>;

namespace {

void require(bool ok) {
    if (!ok) std::abort();  // libFuzzer reports the input
}

// The input, copied to a buffer of exactly its size so ASan sees any over-read.
std::vector<uint8_t> exact(const uint8_t *d, size_t n) {
    return {d, d + n};
}

[[maybe_unused]] void fuzz_mpa(const uint8_t *d, size_t n) {
    if (!n) return;
    const bool reply = d[0] & 1;
    const auto in = exact(d + 1, n - 1);
    wire::MpaFrame f;
    const auto r = wire::decode_mpa_frame(Span(in.data(), in.size()), reply, f);
    if (r.status == wire::DecodeStatus::kNeedMore) require(r.needed > in.size());
    if (r.status != wire::DecodeStatus::kOk) return;
    require(r.needed <= in.size());
    require(f.reply == reply);
    // What was accepted encodes and decodes to the same frame.
    const auto again = wire::encode_mpa_frame(f);
    wire::MpaFrame g;
    const auto r2 = wire::decode_mpa_frame(Span(again.data(), again.size()), reply, g);
    require(r2.status == wire::DecodeStatus::kOk && g.private_data == f.private_data &&
            g.flags == f.flags);
}

// The listener's side of a connection handshake: an MPA request whose private data must be a
// QP hello (raw-verbs QPs) — the parse chain a hostile client reaches first.
[[maybe_unused]] void fuzz_handshake(const uint8_t *d, size_t n) {
    const auto in = exact(d, n);
    wire::MpaFrame f;
    if (wire::decode_mpa_frame(Span(in.data(), in.size()), false, f).status !=
        wire::DecodeStatus::kOk)
        return;
    const auto pd = exact(f.private_data.data(), f.private_data.size());
    wire::QpHello h;
    if (!wire::decode_qp_hello(Span(pd.data(), pd.size()), h)) return;
    uint8_t out[64];
    wire::encode_qp_hello(h, out);
    wire::QpHello g;
    require(wire::decode_qp_hello(Span(out, pd.size() < 64 ? pd.size() : 64), g));
    require(g.dst_qpn == h.dst_qpn && g.src_qpn == h.src_qpn && g.status == h.status);
}

[[maybe_unused]] void fuzz_segment(const uint8_t *d, size_t n) {
    const auto in = exact(d, n);
    wire::SegmentHeader h;
    const auto r = wire::decode_segment_header(Span(in.data(), in.size()), h);
    if (r.status == wire::DecodeStatus::kNeedMore) require(r.header_len > in.size());
    if (r.status != wire::DecodeStatus::kOk) return;
    require(r.header_len <= in.size() && r.header_len == wire::header_len(h.op));
    uint8_t out[wire::kMaxHeaderLen];
    require(wire::encode_segment_header(h, out) == r.header_len);
    // Payload decoders get exactly their length, as the stream hands them.
    const size_t left = in.size() - r.header_len;
    const uint8_t *p = in.data() + r.header_len;
    auto take = [&](size_t len) { return left >= len ? exact(p, len) : std::vector<uint8_t>(); };
    switch (h.op) {
        case wire::RdmapOp::kReadRequest:
            if (auto b = take(wire::kReadRequestLen); !b.empty())
                wire::decode_read_request(b.data());
            break;
        case wire::RdmapOp::kAtomicRequest:
            if (auto b = take(wire::kAtomicRequestLen); !b.empty()) {
                wire::AtomicRequest a;
                wire::decode_atomic_request(b.data(), a);
            }
            break;
        case wire::RdmapOp::kImmediate:
        case wire::RdmapOp::kImmediateSe:
            if (auto b = take(wire::kImmediateLen); !b.empty()) wire::decode_immediate(b.data());
            break;
        case wire::RdmapOp::kControl:
            if (auto b = take(wire::kControlLen); !b.empty()) {
                wire::ControlPayload c;
                wire::decode_control(b.data(), c);
            }
            break;
        case wire::RdmapOp::kTerminate:
            if (auto b = take(wire::kTerminateLen); !b.empty()) wire::decode_terminate(b.data());
            break;
        default:
            break;
    }
}

[[maybe_unused]] void fuzz_ud_header(const uint8_t *d, size_t n) {
    const auto in = exact(d, n);
    wire::UdHeader h;
    if (!wire::decode_ud_header(Span(in.data(), in.size()), h)) return;
    require(in.size() >= wire::kUdHeaderLen && h.dst_qpn < (1u << 24) && h.src_qpn < (1u << 24));
    uint8_t out[wire::kUdHeaderLen];
    wire::encode_ud_header(h, out);
    wire::UdHeader g;
    require(wire::decode_ud_header(Span(out, sizeof out), g) && g.flags == h.flags &&
            g.qkey == h.qkey && g.imm == h.imm);
}

[[maybe_unused]] void fuzz_sidr(const uint8_t *d, size_t n) {
    const auto in = exact(d, n);
    wire::SidrMsg m;
    if (!wire::decode_sidr(Span(in.data(), in.size()), m)) return;
    require(m.private_data.data() >= in.data() &&
            m.private_data.data() + m.private_data.size() <= in.data() + in.size());
    const auto again = wire::encode_sidr(m);
    wire::SidrMsg g;
    require(wire::decode_sidr(Span(again.data(), again.size()), g) && g.req_id == m.req_id &&
            g.private_data.size() == m.private_data.size());
}

// Ethernet frames a raw packet QP receives: parsed, matched against a rule, checksummed. The
// checksums filled in must then verify, whatever the rest of the frame holds.
[[maybe_unused]] void fuzz_eth_frame(const uint8_t *d, size_t n) {
    auto in = exact(d, n);
    wire::EthFrame f;
    if (!wire::parse_eth_frame(Span(in.data(), in.size()), f)) return;
    require(f.l3_off <= in.size() && (!f.ip_version || f.l4_off <= in.size()));
    wire::FrameMatch m;
    m.want_l4 = f.l4_proto;
    require(!f.has_ports || wire::frame_matches(m, f));
    const bool ok = wire::checksums_ok(Span(in.data(), in.size()));
    wire::fill_checksums(std::span<uint8_t>(in.data(), in.size()));
    if (ok) require(wire::checksums_ok(Span(in.data(), in.size())));
}

// The FPDU stream parser as a QP runs it: bytes arrive on a socket, headers are decoded, and
// payloads are placed into whatever the handler names (here a 4 KiB arena, or discarded).
class ArenaHandler : public transport::StreamHandler {
  public:
    bool place(const wire::SegmentHeader &h, transport::Placement &p) override {
        if (h.payload_len <= transport::kScratchPayloadMax &&
            (h.op == wire::RdmapOp::kControl || h.op == wire::RdmapOp::kReadRequest)) {
            p.kind = transport::Placement::Kind::kScratch;
            return true;
        }
        if (h.payload_len > sizeof arena_) {
            p.kind = transport::Placement::Kind::kDiscard;
            return h.op != wire::RdmapOp::kTerminate;
        }
        p.kind = transport::Placement::Kind::kIov;
        p.iov[0] = {arena_, h.payload_len};
        p.iovcnt = 1;
        return true;
    }
    bool on_segment(const wire::SegmentHeader &h, std::span<const uint8_t> scratch) override {
        require(scratch.size() <= transport::kScratchPayloadMax);
        return h.op != wire::RdmapOp::kTerminate;
    }
    bool fill_tx(transport::TxBatch &) override { return false; }

  private:
    uint8_t arena_[4096];
};

[[maybe_unused]] void fuzz_fpdu_stream(const uint8_t *d, size_t n) {
    if (!n || n > 200000) return;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return;
    int big = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    const bool crc = d[0] & 1;
    ssize_t w = ::write(sv[0], d + 1, n - 1);
    (void)w;
    ::close(sv[0]);  // the peer hangs up after its bytes
    transport::FpduStream s(UniqueFd(sv[1]), crc);
    ArenaHandler h;
    for (int round = 0; round < 1000; ++round) {
        bool progressed = false;
        if (s.pump_rx(h, 64, progressed) != transport::IoStatus::kOk) break;
        if (!progressed) break;
    }
}

// Everything an rsocket peer can send: the CM private data, control messages, and the
// datagram headers over UDP and UD. What decodes re-encodes to the same bytes' meaning.
[[maybe_unused]] void fuzz_rsocket(const uint8_t *d, size_t n) {
    if (!n) return;
    const auto in = exact(d + 1, n - 1);
    switch (d[0] % 4) {
        case 0: {
            wire::RsConnData c;
            if (!wire::decode_rs_conn_data(in, c)) return;
            require(c.ring_size && c.ring_size <= wire::kRsImmValueMask && c.credits);
            uint8_t out[wire::kRsConnDataLen];
            wire::encode_rs_conn_data(c, out);
            wire::RsConnData again;
            require(wire::decode_rs_conn_data(out, again) && again.ring_addr == c.ring_addr &&
                    again.ring_size == c.ring_size && again.credits == c.credits);
            break;
        }
        case 1: {
            wire::RsCtrlMsg m;
            if (!wire::decode_rs_ctrl(in, m)) return;
            uint8_t out[wire::kRsCtrlLen];
            wire::encode_rs_ctrl(m, out);
            wire::RsCtrlMsg again;
            require(wire::decode_rs_ctrl(out, again) && again.type == m.type && again.a == m.a &&
                    again.b == m.b && again.c == m.c && again.d == m.d);
            break;
        }
        case 2: {
            wire::RsUdpHdr h;
            if (!wire::decode_rs_udp_hdr(in, h)) return;
            require(h.qpn <= 0xffffff);
            uint8_t out[wire::kRsUdpHdrLen];
            wire::encode_rs_udp_hdr(h, out);
            wire::RsUdpHdr again;
            require(wire::decode_rs_udp_hdr(out, again) && again.op == h.op && again.qpn == h.qpn);
            break;
        }
        default: {
            wire::RsUdHdr h;
            if (!wire::decode_rs_ud_hdr(in, h)) return;
            uint8_t out[wire::kRsUdHdrLen];
            wire::encode_rs_ud_hdr(h, out);
            wire::RsUdHdr again;
            require(wire::decode_rs_ud_hdr(out, again) && again.src_port == h.src_port &&
                    again.src_qpn == h.src_qpn);
            break;
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
#if defined(SR_FUZZ_MPA)
    fuzz_mpa(d, n);
#elif defined(SR_FUZZ_HANDSHAKE)
    fuzz_handshake(d, n);
#elif defined(SR_FUZZ_SEGMENT)
    fuzz_segment(d, n);
#elif defined(SR_FUZZ_UD_HEADER)
    fuzz_ud_header(d, n);
#elif defined(SR_FUZZ_SIDR)
    fuzz_sidr(d, n);
#elif defined(SR_FUZZ_ETH_FRAME)
    fuzz_eth_frame(d, n);
#elif defined(SR_FUZZ_FPDU_STREAM)
    fuzz_fpdu_stream(d, n);
#elif defined(SR_FUZZ_RSOCKET)
    fuzz_rsocket(d, n);
#else
#error "define one SR_FUZZ_<TARGET>"
#endif
    return 0;
}
