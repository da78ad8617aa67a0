// SPDX-License-Identifier: BSD-2-Clause
// Writes the seed corpora in tests/fuzz/corpus/<target>/: valid frames made with our own
// encoders (the fuzzer mutates from there). Run once after a wire format changes:
//   build-fuzz/bin/fuzz_make_seeds tests/fuzz/corpus
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "wire/eth_frame.h"
#include "wire/mpa.h"
#include "wire/qp_hello.h"
#include "wire/rdmap.h"
#include "wire/rsocket_msg.h"
#include "wire/sidr.h"
#include "wire/ud_header.h"

using namespace softrdma::wire;
using Bytes = std::vector<uint8_t>;

namespace {

std::string g_root;

void put(const std::string &target, const std::string &name, const Bytes &b) {
    const std::string dir = g_root + "/" + target;
    mkdir(dir.c_str(), 0755);
    FILE *f = std::fopen((dir + "/" + name).c_str(), "wb");
    if (!f) return;
    std::fwrite(b.data(), 1, b.size(), f);
    std::fclose(f);
}

Bytes segment(const SegmentHeader &h, const Bytes &payload) {
    Bytes out(kMaxHeaderLen);
    out.resize(encode_segment_header(h, out.data()));
    out.insert(out.end(), payload.begin(), payload.end());
    out.resize(out.size() + pad_len(header_len(h.op), payload.size()));
    return out;
}

Bytes hello_request() {
    QpHello h;
    h.qp_type = 2;
    h.dst_qpn = 0x9c4101;
    h.src_qpn = 0x9c4102;
    h.src_gid[10] = h.src_gid[11] = 0xff;
    h.src_gid[12] = 127;
    h.src_gid[15] = 1;
    std::copy(h.src_gid, h.src_gid + 16, h.dst_gid);
    Bytes pd(48);
    encode_qp_hello(h, pd.data());
    MpaFrame f;
    f.flags = kMpaFlagEnhanced | kMpaFlagSoftrdmaExt;
    f.ird = f.ord = 16;
    f.private_data = pd;
    return encode_mpa_frame(f);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
        return 2;
    }
    g_root = argv[1];
    mkdir(g_root.c_str(), 0755);

    MpaFrame req;
    req.flags = kMpaFlagEnhanced;
    req.private_data = Bytes(56, 0x11);
    Bytes r = encode_mpa_frame(req);
    r.insert(r.begin(), 0);  // first byte: expect a request
    put("mpa", "request", r);
    MpaFrame rep = req;
    rep.reply = true;
    rep.flags |= kMpaFlagCrc;
    Bytes p = encode_mpa_frame(rep);
    p.insert(p.begin(), 1);
    put("mpa", "reply_crc", p);
    put("handshake", "raw_verbs_request", hello_request());

    SegmentHeader send;
    send.op = RdmapOp::kSend;
    send.msn = 1;
    put("segment", "send", segment(send, Bytes(5, 0x42)));
    SegmentHeader write;
    write.op = RdmapOp::kWrite;
    write.stag = 0x1234;
    write.to = 0x1000;
    put("segment", "write", segment(write, Bytes(64, 0x77)));
    SegmentHeader rr;
    rr.op = RdmapOp::kReadRequest;
    rr.qn = kQnReadRequest;
    rr.msn = 1;
    Bytes rrp(kReadRequestLen);
    encode_read_request({0x10, 0x2000, 4096, 0x20, 0x3000}, rrp.data());
    put("segment", "read_request", segment(rr, rrp));
    SegmentHeader ctl;
    ctl.op = RdmapOp::kControl;
    ctl.qn = kQnControl;
    Bytes cp(kControlLen);
    encode_control({ControlType::kAck, 7, 0}, cp.data());
    put("segment", "ack", segment(ctl, cp));

    // A stream: a SEND, a WRITE and an ACK back to back (first byte: no CRC).
    Bytes stream{0};
    for (const Bytes &s :
         {segment(send, Bytes(5, 0x42)), segment(write, Bytes(64, 0x77)), segment(ctl, cp)})
        stream.insert(stream.end(), s.begin(), s.end());
    put("fpdu_stream", "send_write_ack", stream);

    // rsockets: first byte picks the decoder (0 connect data, 1 control, 2 UDP, 3 UD header).
    RsConnData cd;
    cd.credits = 256;
    cd.iomap_size = 1;
    cd.ring_addr = 0x7f0000001000;
    cd.ring_rkey = 0x102;
    cd.ring_size = 1 << 19;
    Bytes rs(1 + kRsConnDataLen, 0);
    encode_rs_conn_data(cd, rs.data() + 1);
    put("rsocket", "conn_data", rs);
    RsCtrlMsg cm;
    cm.type = RsCtrl::kIomap;
    cm.a = 0;
    cm.b = 0x7f0000002000;
    cm.c = 0x203;
    cm.d = 4096;
    Bytes rc(1 + kRsCtrlLen, 1);
    encode_rs_ctrl(cm, rc.data() + 1);
    put("rsocket", "ctrl_iomap", rc);
    RsUdpHdr uhd;
    uhd.qpn = 0x123456;
    Bytes ru(1 + kRsUdpHdrLen, 2);
    encode_rs_udp_hdr(uhd, ru.data() + 1);
    put("rsocket", "udp_data", ru);
    RsUdHdr udh;
    udh.src_port = 7174;
    udh.src_qpn = 0x654321;
    Bytes rd(1 + kRsUdHdrLen, 3);
    encode_rs_ud_hdr(udh, rd.data() + 1);
    put("rsocket", "ud_header", rd);

    UdHeader uh;
    uh.flags = kUdFlagImm;
    uh.dst_qpn = 0x12ab34;
    uh.src_qpn = 0xa1b2ff;
    uh.qkey = 0x11111111;
    uh.imm = 7;
    Bytes ud(kUdHeaderLen);
    encode_ud_header(uh, ud.data());
    ud.insert(ud.end(), {1, 2, 3});
    put("ud_header", "send_imm", ud);

    SidrMsg sm;
    sm.req_id = 0xdeadbeef;
    const Bytes spd(20, 0xab);
    sm.private_data = spd;
    put("sidr", "request", encode_sidr(sm));
    sm.type = SidrType::kReply;
    sm.qpn = 0xa1b2ff;
    sm.qkey = 0x01234567;
    put("sidr", "reply", encode_sidr(sm));

    // Raw packet QP frames: tagged IPv4/UDP and IPv6/TCP, checksums filled in.
    Bytes v4 = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7, 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8, 0x81, 0x00,
                0xac, 0x0c, 0x08, 0x00, 0x45, 0x00, 0x00, 0x24, 0,    0,    0x40, 0,    64,   17,
                0,    0,    1,    1,    1,    1,    2,    2,    2,    2,    0x04, 0xd2, 0x16, 0x2e,
                0x00, 0x10, 0,    0,    1,    2,    3,    4,    5,    6,    7,    8};
    fill_checksums(v4);
    put("eth_frame", "vlan_ipv4_udp", v4);
    Bytes v6 = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7, 0x24, 0x8a, 0x07, 0xa5, 0x28,
                0xc8, 0x86, 0xdd, 0x60, 0,    0,    0,    0,    20,   6,    64};
    for (int i = 0; i < 32; ++i) v6.push_back(uint8_t(0xa0 + i));
    v6.insert(v6.end(),
              {0x04, 0xd2, 0x16, 0x2e, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0});
    fill_checksums(v6);
    put("eth_frame", "ipv6_tcp", v6);
    return 0;
}
