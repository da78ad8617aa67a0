/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sr_rc_demo: the project's main job. Two processes join one RC queue pair over 127.0.0.1
 * (addresses exchanged over a plain TCP socket, as ibv_rc_pingpong does) and then move data
 * with SEND, RDMA WRITE and RDMA READ, checking every byte.
 *
 *   sr_rc_demo -s [-p port]            server
 *   sr_rc_demo -c 127.0.0.1 [-p port]  client
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_SIZE (1u << 20)
#define MSG_SIZE 64

struct peer_info {
    uint32_t qpn;
    uint32_t rkey;
    uint64_t addr;
    uint8_t gid[16];
};

static int die(const char *what) {
    perror(what);
    exit(1);
}

static int oob_connect(const char *host, const char *port, int server) {
    struct addrinfo hints = {0}, *res;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = server ? AI_PASSIVE : 0;
    if (getaddrinfo(host, port, &hints, &res)) die("getaddrinfo");
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (server) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 1)) die("bind/listen");
        int c = accept(fd, NULL, NULL);
        close(fd);
        fd = c;
    } else {
        int tries = 0;
        while (connect(fd, res->ai_addr, res->ai_addrlen)) {
            if (++tries > 100) die("connect");
            usleep(50000);
            close(fd);
            fd = socket(res->ai_family, SOCK_STREAM, 0);
        }
    }
    freeaddrinfo(res);
    return fd;
}

static void xfer(int fd, struct peer_info *mine, struct peer_info *theirs) {
    if (write(fd, mine, sizeof *mine) != sizeof *mine) die("write");
    size_t got = 0;
    while (got < sizeof *theirs) {
        ssize_t n = read(fd, (char *)theirs + got, sizeof *theirs - got);
        if (n <= 0) die("read");
        got += (size_t)n;
    }
}

static void wait_wc(struct ibv_cq *cq, enum ibv_wc_opcode op) {
    struct ibv_wc wc;
    for (long spins = 0;; ++spins) {
        int n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0) die("poll_cq");
        if (n == 1) {
            if (wc.status != IBV_WC_SUCCESS || wc.opcode != op) {
                fprintf(stderr, "completion failed: %s (opcode %d)\n",
                        ibv_wc_status_str(wc.status), wc.opcode);
                exit(1);
            }
            return;
        }
        if (spins > 2000000000L) {
            fprintf(stderr, "timeout waiting for completion\n");
            exit(1);
        }
    }
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, char *buf) {
    struct ibv_sge sge = {(uintptr_t)buf, MSG_SIZE, mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
    if (ibv_post_recv(qp, &wr, &bad)) die("post_recv");
}

static void post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr, char *buf,
                 uint32_t len, const struct peer_info *peer, uint64_t off) {
    struct ibv_sge sge = {(uintptr_t)buf, len, mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED}, *bad;
    if (peer) {
        wr.wr.rdma.remote_addr = peer->addr + off;
        wr.wr.rdma.rkey = peer->rkey;
    }
    if (ibv_post_send(qp, &wr, &bad)) die("post_send");
}

int main(int argc, char **argv) {
    const char *host = NULL, *port = "18600";
    int server = 0, opt;
    while ((opt = getopt(argc, argv, "sc:p:")) != -1) {
        if (opt == 's') server = 1;
        else if (opt == 'c') host = optarg;
        else if (opt == 'p') port = optarg;
        else return 2;
    }
    if (!server && !host) {
        fprintf(stderr, "usage: %s -s | -c host [-p port]\n", argv[0]);
        return 2;
    }

    int ndev;
    struct ibv_device **list = ibv_get_device_list(&ndev);
    if (!list || ndev == 0) die("no RDMA device");
    struct ibv_context *ctx = ibv_open_device(list[0]);
    if (!ctx) die("open_device");
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    char *buf = aligned_alloc(4096, BUF_SIZE);
    memset(buf, 0, BUF_SIZE);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF_SIZE,
                                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                       IBV_ACCESS_REMOTE_READ);
    if (!pd || !cq || !mr) die("resources");
    struct ibv_qp_init_attr qia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = {.max_send_wr = 8, .max_recv_wr = 8,
                                           .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp *qp = ibv_create_qp(pd, &qia);
    if (!qp) die("create_qp");

    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        die("INIT");
    post_recv(qp, mr, buf);

    struct peer_info mine = {qp->qp_num, mr->rkey, (uintptr_t)buf, {0}}, peer;
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, 0, &gid)) die("query_gid");
    memcpy(mine.gid, gid.raw, 16);
    int oob = oob_connect(server ? NULL : host, port, server);
    xfer(oob, &mine, &peer);

    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = peer.qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 1;
    memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        die("RTR");
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        die("RTS");
    /* The server's first half (after the message area) is what the client reads back: fill
     * it before either side can start, and never into the second half the client writes. */
    const size_t half = BUF_SIZE / 2;
    if (server)
        for (size_t i = 0; i < half - MSG_SIZE; ++i) buf[MSG_SIZE + i] = (char)(i * 7 + 3);
    char sync = 0;
    if (write(oob, &sync, 1) != 1 || read(oob, &sync, 1) != 1) die("sync");

    if (server) {
        /* 1. SEND from the client. 2. The client writes the second half of our buffer
         * while we only wait; 3. it reads our first half back; 4. "done" SEND. */
        wait_wc(cq, IBV_WC_RECV);
        printf("server: received \"%s\"\n", buf);
        post_recv(qp, mr, buf);
        wait_wc(cq, IBV_WC_RECV);
        for (size_t i = 0; i < half - MSG_SIZE; ++i)
            if (buf[half + i] != (char)(i * 13 + 1)) {
                fprintf(stderr, "server: RDMA WRITE data wrong at %zu\n", i);
                return 1;
            }
        printf("server: RDMA WRITE of %zu bytes verified, client said \"%s\"\n",
               half - MSG_SIZE, buf);
    } else {
        strcpy(buf, "Hello from softrdma over RC!");
        post(qp, IBV_WR_SEND, mr, buf, MSG_SIZE, NULL, 0);
        wait_wc(cq, IBV_WC_SEND);
        for (size_t i = 0; i < half - MSG_SIZE; ++i) buf[half + i] = (char)(i * 13 + 1);
        post(qp, IBV_WR_RDMA_WRITE, mr, buf + half, (uint32_t)(half - MSG_SIZE), &peer, half);
        wait_wc(cq, IBV_WC_RDMA_WRITE);
        post(qp, IBV_WR_RDMA_READ, mr, buf + MSG_SIZE, (uint32_t)(half - MSG_SIZE), &peer,
             MSG_SIZE);
        wait_wc(cq, IBV_WC_RDMA_READ);
        for (size_t i = 0; i < half - MSG_SIZE; ++i)
            if (buf[MSG_SIZE + i] != (char)(i * 7 + 3)) {
                fprintf(stderr, "client: RDMA READ data wrong at %zu\n", i);
                return 1;
            }
        printf("client: RDMA READ of %zu bytes verified\n", half - MSG_SIZE);
        strcpy(buf, "done");
        post(qp, IBV_WR_SEND, mr, buf, MSG_SIZE, NULL, 0);
        wait_wc(cq, IBV_WC_SEND);
    }
    if (write(oob, &sync, 1) != 1 || read(oob, &sync, 1) != 1) die("sync");
    close(oob);
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    free(buf);
    printf("%s: OK\n", server ? "server" : "client");
    return 0;
}
