// SPDX-License-Identifier: BSD-2-Clause
// rsockets between two processes: stream data checked byte for byte through a ring small
// enough to wrap and run out of credits, EOF and half-close, the socket API's errno values,
// non-blocking calls and rpoll/rselect mixed with ordinary descriptors, MSG_PEEK/MSG_WAITALL,
// direct placement (riomap/riowrite), and datagrams. Run on both paths (process_tcp.all).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "process/cm_helpers.h"
#include "process/harness.h"

using namespace sr_test;

namespace {

uint8_t pat(size_t i) {
    return uint8_t(i * 131 + (i >> 11));
}

// A counter of our one QP ("rcvd_pkts", "sent_pkts"), as `softrdma stat` reports it.
uint64_t qp_counter_of_self(const char *key) {
    int st = 0;
    const std::string out = run_cli("stat " + std::to_string(getpid()), st);
    const std::string k = std::string(key) + " ";
    const size_t at = out.find(k);
    PCHECK(at != std::string::npos);
    return std::stoull(out.substr(at + k.size()));
}

// A listening stream rsocket on 127.0.0.1 (any port); its port goes to the peer.
int listen_and_tell(Oob &oob, int rcvbuf = 0, uint32_t iomap = 0) {
    const int fd = rsocket(AF_INET, SOCK_STREAM, 0);
    PCHECK(fd >= 0);
    int one = 1;
    PCHECK(rsetsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    if (rcvbuf) PCHECK(rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) == 0);
    if (iomap) PCHECK(rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof iomap) == 0);
    sockaddr_in a = loopback(0);
    PCHECK(rbind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    PCHECK(rgetsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
    PCHECK(rlisten(fd, 8) == 0);
    oob.put(uint16_t(ntohs(a.sin_port)));
    return fd;
}

int connect_to(Oob &oob, int sndbuf = 0, uint32_t iomap = 0) {
    const uint16_t port = oob.get<uint16_t>();
    const int fd = rsocket(AF_INET, SOCK_STREAM, 0);
    PCHECK(fd >= 0);
    if (sndbuf) PCHECK(rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) == 0);
    if (iomap) PCHECK(rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof iomap) == 0);
    const sockaddr_in a = loopback(port);
    PCHECK(rconnect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0);
    return fd;
}

constexpr size_t kBytes = 6 << 20;

// 6 MiB in sends of odd sizes (and iovec pieces) through an 8 KiB ring: the ring wraps
// hundreds of times and the sender waits on credits; the receiver reads in odd sizes too.
TEST(Rsocket, StreamThroughASmallRingArrivesWholeAndInOrder) {
    auto server = [](Oob &oob) {
        const int lfd = listen_and_tell(oob, 4096);  // doubled, as TCP does: an 8 KiB ring
        const int fd = raccept(lfd, nullptr, nullptr);
        PCHECK(fd >= 0);
        std::vector<uint8_t> buf(70000);
        size_t got = 0, step = 1;
        while (got < kBytes) {
            const size_t want = std::min(buf.size(), (step++ * 7919) % 65521 + 1);
            const ssize_t n = rrecv(fd, buf.data(), want, 0);
            PCHECK(n > 0);
            for (ssize_t i = 0; i < n; ++i) PCHECK_EQ(buf[size_t(i)], pat(got + size_t(i)));
            got += size_t(n);
        }
        // The client shut its side: EOF, and ours still carries data the other way.
        PCHECK_EQ(rrecv(fd, buf.data(), buf.size(), 0), 0);
        const char bye[] = "bye";
        PCHECK_EQ(rsend(fd, bye, sizeof bye, 0), ssize_t(sizeof bye));
        PCHECK(rclose(fd) == 0);
        PCHECK(rclose(lfd) == 0);
        return 0;
    };
    auto client = [](Oob &oob) {
        const int fd = connect_to(oob);
        std::vector<uint8_t> src(kBytes);
        for (size_t i = 0; i < kBytes; ++i) src[i] = pat(i);
        size_t sent = 0, step = 1;
        while (sent < kBytes) {
            const size_t want = std::min(kBytes - sent, (step++ * 104729) % 200003 + 1);
            // Every third send as three iovec pieces.
            ssize_t n;
            if (step % 3 == 0 && want >= 3) {
                iovec v[3] = {{&src[sent], want / 3},
                              {&src[sent + want / 3], want / 3},
                              {&src[sent + 2 * (want / 3)], want - 2 * (want / 3)}};
                n = rwritev(fd, v, 3);
            } else {
                n = rsend(fd, &src[sent], want, 0);
            }
            PCHECK_EQ(n, ssize_t(want));  // blocking: all of it
            sent += size_t(n);
        }
        PCHECK(rshutdown(fd, SHUT_WR) == 0);
        char bye[8] = {};
        PCHECK_EQ(rrecv(fd, bye, sizeof bye, MSG_WAITALL), 4);  // then EOF ends the wait
        PCHECK(std::strcmp(bye, "bye") == 0);
        errno = 0;
        PCHECK_EQ(rsend(fd, bye, 1, 0), -1);  // we shut our sending side
        PCHECK_EQ(errno, EPIPE);
        PCHECK(rclose(fd) == 0);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client, 120000));
}

// The socket API's answers, as rdma-core's rsockets give them.
TEST(Rsocket, ErrnoValuesAsTheSocketApi) {
    auto client = [](Oob &oob) {
        errno = 0;
        PCHECK_EQ(rsocket(AF_INET, SOCK_RAW, 0), -1);
        PCHECK_EQ(errno, ENOTSUP);
        PCHECK_EQ(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
        PCHECK_EQ(errno, ENOTSUP);
        char c = 0;
        PCHECK_EQ(rsend(0, &c, 1, 0), -1);  // stdin is no rsocket
        PCHECK_EQ(errno, EBADF);
        PCHECK_EQ(rclose(12345), -1);
        PCHECK_EQ(errno, EBADF);

        const int fd = rsocket(AF_INET, SOCK_STREAM, 0);
        PCHECK(fd >= 0);
        PCHECK_EQ(rrecv(fd, &c, 1, 0), -1);
        PCHECK_EQ(errno, ENOTCONN);
        PCHECK_EQ(rfcntl(fd, F_GETFL), O_RDWR);
        int v = 0;
        PCHECK_EQ(rsetsockopt(fd, SOL_SOCKET, SO_BROADCAST, &v, sizeof v), -1);
        PCHECK_EQ(errno, ENOTSUP);
        PCHECK_EQ(rshutdown(fd, 7), -1);
        PCHECK_EQ(errno, EINVAL);
        // Nothing listens on port 1: refused.
        const sockaddr_in a = loopback(1);
        PCHECK_EQ(rconnect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a), -1);
        PCHECK_EQ(errno, ECONNREFUSED);
        PCHECK(rclose(fd) == 0);

        // The same without blocking: EINPROGRESS, then POLLOUT and SO_ERROR say refused.
        const int nb = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        PCHECK(nb >= 0);
        PCHECK(rfcntl(nb, F_GETFL) & O_NONBLOCK);
        PCHECK_EQ(rconnect(nb, reinterpret_cast<const sockaddr *>(&a), sizeof a), -1);
        PCHECK_EQ(errno, EINPROGRESS);
        pollfd p{nb, POLLOUT, 0};
        PCHECK_EQ(rpoll(&p, 1, 10000), 1);
        PCHECK(p.revents & (POLLOUT | POLLERR));
        int err = 0;
        socklen_t len = sizeof err;
        PCHECK(rgetsockopt(nb, SOL_SOCKET, SO_ERROR, &err, &len) == 0);
        PCHECK_EQ(err, ECONNREFUSED);
        PCHECK(rclose(nb) == 0);
        oob.barrier();
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(client, idle_peer));
}

// Non-blocking accept/recv, rpoll and rselect over an rsocket and a pipe, MSG_PEEK.
TEST(Rsocket, NonBlockingCallsAndPollMixedWithOrdinaryDescriptors) {
    auto server = [](Oob &oob) {
        const int lfd = listen_and_tell(oob);
        PCHECK(rfcntl(lfd, F_SETFL, O_NONBLOCK) == 0);
        PCHECK_EQ(raccept(lfd, nullptr, nullptr), -1);
        PCHECK_EQ(errno, EAGAIN);
        oob.barrier();  // the client may connect now
        pollfd lp{lfd, POLLIN, 0};
        PCHECK_EQ(rpoll(&lp, 1, 10000), 1);
        sockaddr_in peer{};
        socklen_t plen = sizeof peer;
        const int fd = raccept(lfd, reinterpret_cast<sockaddr *>(&peer), &plen);
        PCHECK(fd >= 0);
        PCHECK_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
        PCHECK(rfcntl(fd, F_SETFL, O_NONBLOCK) == 0);
        char b[16];
        PCHECK_EQ(rrecv(fd, b, sizeof b, 0), -1);
        PCHECK_EQ(errno, EAGAIN);

        int pp[2];
        PCHECK(pipe(pp) == 0);
        oob.barrier();  // the client sends 5 bytes
        pollfd ps[2] = {{pp[0], POLLIN, 0}, {fd, POLLIN, 0}};
        PCHECK_EQ(rpoll(ps, 2, 10000), 1);
        PCHECK_EQ(ps[0].revents, 0);
        PCHECK(ps[1].revents & POLLIN);
        PCHECK_EQ(rrecv(fd, b, 3, MSG_PEEK), 3);  // a look leaves the bytes
        PCHECK_EQ(rrecv(fd, b, sizeof b, 0), 5);
        PCHECK(std::memcmp(b, "hello", 5) == 0);
        // The pipe alone wakes rselect, the rsocket staying quiet.
        PCHECK_EQ(write(pp[1], "x", 1), 1);
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(pp[0], &rd);
        FD_SET(fd, &rd);
        timeval tv{5, 0};
        PCHECK_EQ(rselect(std::max(pp[0], fd) + 1, &rd, nullptr, nullptr, &tv), 1);
        PCHECK(FD_ISSET(pp[0], &rd) && !FD_ISSET(fd, &rd));
        // A timeout with nothing ready returns 0.
        char x;
        PCHECK_EQ(read(pp[0], &x, 1), 1);
        pollfd q{fd, POLLIN, 0};
        PCHECK_EQ(rpoll(&q, 1, 50), 0);
        oob.barrier();
        close(pp[0]);
        close(pp[1]);
        rclose(fd);
        rclose(lfd);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        oob.barrier();
        const int fd = rsocket(AF_INET, SOCK_STREAM, 0);
        const sockaddr_in a = loopback(port);
        PCHECK(rconnect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0);
        int one = 1;
        PCHECK(rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
        oob.barrier();
        PCHECK_EQ(rsend(fd, "hello", 5, 0), 5);
        oob.barrier();
        rclose(fd);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// riowrite into the peer's riomap'ed buffer; a later rsend announces it (RC keeps order).
TEST(Rsocket, RiowriteLandsInTheMappedBufferBeforeLaterData) {
    constexpr size_t kLen = 256 << 10;
    auto server = [](Oob &oob) {
        const int lfd = listen_and_tell(oob, 0, 1);
        const int fd = raccept(lfd, nullptr, nullptr);
        PCHECK(fd >= 0);
        std::vector<uint8_t> target(kLen, 0);
        PCHECK_EQ(riomap(fd, target.data(), kLen, PROT_WRITE, 0, 0), 0);
        PCHECK_EQ(rsend(fd, "m", 1, 0), 1);  // our map goes before this
        char c;
        PCHECK_EQ(rrecv(fd, &c, 1, 0), 1);  // written, then announced
        for (size_t i = 0; i < kLen; ++i) PCHECK_EQ(target[i], pat(i + 5));
        PCHECK(riounmap(fd, target.data(), kLen) == 0);
        rclose(fd);
        rclose(lfd);
        return 0;
    };
    auto client = [](Oob &oob) {
        const int fd = connect_to(oob, 0, 1);
        char c;
        PCHECK_EQ(rrecv(fd, &c, 1, 0), 1);  // the map has arrived
        std::vector<uint8_t> src(kLen);
        for (size_t i = 0; i < kLen; ++i) src[i] = pat(i + 5);
        PCHECK_EQ(riowrite(fd, src.data(), kLen, 0, 0), kLen);
        PCHECK_EQ(rsend(fd, "d", 1, 0), 1);
        PCHECK_EQ(rrecv(fd, &c, 1, 0), 0);  // the server closes after checking
        rclose(fd);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// Datagrams: each arrives whole or not at all, with its sender's address; the reply goes
// back to that address, over the UD QP once the first datagram has found the peer's QP; too
// large a datagram is EMSGSIZE.
TEST(Rsocket, DatagramsEchoWithTheirSourceAddress) {
    auto server = [](Oob &oob) {
        const int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
        PCHECK(fd >= 0);
        sockaddr_in a = loopback(0);
        PCHECK(rbind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
        socklen_t len = sizeof a;
        PCHECK(rgetsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
        oob.put(uint16_t(ntohs(a.sin_port)));
        std::vector<uint8_t> buf(4096);
        for (;;) {
            sockaddr_in from{};
            socklen_t flen = sizeof from;
            const ssize_t n = rrecvfrom(fd, buf.data(), buf.size(), 0,
                                        reinterpret_cast<sockaddr *>(&from), &flen);
            PCHECK(n >= 4);
            PCHECK_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
            PCHECK_EQ(
                rsendto(fd, buf.data(), size_t(n), 0, reinterpret_cast<sockaddr *>(&from), flen),
                n);
            if (buf[0] == 0xff) break;
        }
        rclose(fd);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        const int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
        PCHECK(fd >= 0);
        const sockaddr_in a = loopback(port);
        PCHECK(rconnect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0);
        std::vector<uint8_t> big(5000);
        PCHECK_EQ(rsend(fd, big.data(), big.size(), 0), -1);
        PCHECK_EQ(errno, EMSGSIZE);
        std::vector<uint8_t> out(4000), in(4096);
        int answered = 0;
        for (int i = 0; i < 300; ++i) {
            const size_t n = 4 + size_t(i * 13) % 3990;
            out[0] = i == 299 ? 0xff : 0;
            std::memcpy(&out[1], &i, 3);
            for (size_t k = 4; k < n; ++k) out[k] = uint8_t(k + size_t(i));
            // A datagram may be lost: resend until its echo comes (bounded).
            for (int attempt = 0; attempt < 50; ++attempt) {
                PCHECK_EQ(rsend(fd, out.data(), n, 0), ssize_t(n));
                pollfd p{fd, POLLIN, 0};
                if (rpoll(&p, 1, 200) != 1) continue;
                const ssize_t got = rrecv(fd, in.data(), in.size(), 0);
                PCHECK(got > 0);
                int seq = 0;
                std::memcpy(&seq, &in[1], 3);
                if (seq != i) continue;  // a late echo of an earlier resend
                PCHECK_EQ(got, ssize_t(n));
                PCHECK(std::memcmp(in.data(), out.data(), n) == 0);
                ++answered;
                break;
            }
        }
        PCHECK_EQ(answered, 300);
        // Only the first datagram went over UDP: the rest over the UD QP.
        PCHECK(qp_counter_of_self("sent_pkts") >= 290);
        rclose(fd);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// SO_KEEPALIVE with TCP_KEEPIDLE 1 on the listener (the accepted socket takes it): an idle
// connection still carries a message a second from the server, and both read the options back.
TEST(Rsocket, KeepaliveMessagesFlowOnAnIdleConnection) {
    auto server = [](Oob &oob) {
        const int lfd = rsocket(AF_INET, SOCK_STREAM, 0);
        int one = 1, idle = 1;
        PCHECK(rsetsockopt(lfd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) == 0);
        PCHECK(rsetsockopt(lfd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) == 0);
        int zero = 0;
        PCHECK_EQ(rsetsockopt(lfd, IPPROTO_TCP, TCP_KEEPIDLE, &zero, sizeof zero), -1);
        PCHECK_EQ(errno, EINVAL);
        sockaddr_in a = loopback(0);
        PCHECK(rbind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
        socklen_t len = sizeof a;
        PCHECK(rgetsockname(lfd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
        PCHECK(rlisten(lfd, 1) == 0);
        oob.put(uint16_t(ntohs(a.sin_port)));
        const int fd = raccept(lfd, nullptr, nullptr);
        PCHECK(fd >= 0);
        int v = 0;
        len = sizeof v;
        PCHECK(rgetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &len) == 0 && v == 1);
        PCHECK(rgetsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len) == 0 && v == 1);
        char c;
        PCHECK_EQ(rrecv(fd, &c, 1, 0), 0);  // idle until the client closes
        rclose(fd);
        rclose(lfd);
        return 0;
    };
    auto client = [](Oob &oob) {
        const int fd = connect_to(oob);
        usleep(300 * 1000);
        const uint64_t before = qp_counter_of_self("rcvd_pkts");
        usleep(3500 * 1000);  // nothing sent either way: only keepalives
        const uint64_t after = qp_counter_of_self("rcvd_pkts");
        PCHECK(after >= before + 2);
        rclose(fd);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

// A peer that speaks the connect data right and then breaks the protocol (an immediate with an
// op no rsocket sends) loses its connection: the server's rrecv ends, nothing else happens,
// and the listener goes on to serve a well-behaved client.
TEST(Rsocket, AProtocolBreakingPeerLosesItsConnectionOnly) {
    auto server = [](Oob &oob) {
        const int lfd = listen_and_tell(oob);
        const int bad = raccept(lfd, nullptr, nullptr);
        PCHECK(bad >= 0);
        char b[64];
        const uint64_t t0 = now_ms();
        // Torn down, no data delivered: EOF, or ECONNRESET when the break came before the
        // connection was seen established.
        const ssize_t n = rrecv(bad, b, sizeof b, 0);
        PCHECK(n == 0 || (n == -1 && errno == ECONNRESET));
        PCHECK(now_ms() - t0 < 10000);
        rclose(bad);
        const int good = raccept(lfd, nullptr, nullptr);
        PCHECK(good >= 0);
        PCHECK_EQ(rrecv(good, b, 2, MSG_WAITALL), 2);
        PCHECK(std::memcmp(b, "ok", 2) == 0);
        PCHECK_EQ(rsend(good, "ok", 2, 0), 2);
        oob.barrier();
        rclose(good);
        rclose(lfd);
        return 0;
    };
    auto client = [](Oob &oob) {
        const uint16_t port = oob.get<uint16_t>();
        rdma_event_channel *ch = rdma_create_event_channel();
        PCHECK(ch);
        rdma_cm_id *id = resolved_id(ch, port);
        ibv_qp_init_attr qa{};
        qa.qp_type = IBV_QPT_RC;
        qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        PCHECK(rdma_create_qp(id, nullptr, &qa) == 0);
        static uint8_t ring[4096];
        ibv_mr *mr =
            ibv_reg_mr(id->pd, ring, sizeof ring, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        PCHECK(mr);
        // The connect data of an rsocket (docs/wire.md 9.5), big-endian.
        uint8_t pd[40] = {};
        pd[0] = 1;
        pd[3] = 16;  // credits
        const uint64_t addr = reinterpret_cast<uintptr_t>(ring);
        for (int i = 0; i < 8; ++i) pd[8 + i] = uint8_t(addr >> (56 - 8 * i));
        for (int i = 0; i < 4; ++i) pd[16 + i] = uint8_t(mr->rkey >> (24 - 8 * i));
        pd[22] = 0x10;  // 4096
        rdma_conn_param p{};
        p.private_data = pd;
        p.private_data_len = sizeof pd;
        p.responder_resources = p.initiator_depth = 1;
        p.retry_count = 7;
        PCHECK(rdma_connect(id, &p) == 0);
        rdma_cm_event *ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED);
        PCHECK(ev->param.conn.private_data_len >= 40);
        const auto *sp = static_cast<const uint8_t *>(ev->param.conn.private_data);
        uint64_t raddr = 0;
        uint32_t rkey = 0;
        for (int i = 0; i < 8; ++i) raddr = raddr << 8 | sp[8 + i];
        for (int i = 0; i < 4; ++i) rkey = rkey << 8 | sp[16 + i];
        rdma_ack_cm_event(ev);
        // 16 bytes into its ring with an immediate whose op (7) no rsocket sends.
        ibv_sge sge{reinterpret_cast<uintptr_t>(ring), 16, mr->lkey};
        ibv_send_wr wr{}, *badwr = nullptr;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.imm_data = htonl(7u << 29 | 16);
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
        PCHECK(ibv_post_send(id->qp, &wr, &badwr) == 0);
        rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
        rdma_destroy_qp(id);
        ibv_dereg_mr(mr);
        rdma_destroy_id(id);
        rdma_destroy_event_channel(ch);

        const int fd = rsocket(AF_INET, SOCK_STREAM, 0);
        const sockaddr_in a = loopback(port);
        PCHECK(rconnect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0);
        PCHECK_EQ(rsend(fd, "ok", 2, 0), 2);
        char b[2];
        PCHECK_EQ(rrecv(fd, b, 2, MSG_WAITALL), 2);
        oob.barrier();
        rclose(fd);
        return 0;
    };
    EXPECT_PAIR_OK(run_pair(server, client));
}

}  // namespace
