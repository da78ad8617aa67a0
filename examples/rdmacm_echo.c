// SPDX-License-Identifier: BSD-2-Clause
// An echo over the RDMA connection manager, with the synchronous endpoint API of
// <rdma/rdma_verbs.h>: the client sends COUNT messages, the server sends each one back, the
// client checks every byte. Any error completion is printed in words and ends the program with
// status 2 (examples/fault_injection.sh provokes some).
//
//   rdmacm_echo -s [-p PORT]                 server (one client, then exits)
//   rdmacm_echo -c HOST [-p PORT] [-n COUNT] [-r RNR_RETRY]
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kMsgLen = 64 };

static int fail(const char *what) {
    perror(what);
    return 1;
}

// Waits for one completion of `kind` ("send" or "receive"); 0 on success.
static int completed(struct rdma_cm_id *id, int recv, int index) {
    struct ibv_wc wc;
    const int n = recv ? rdma_get_recv_comp(id, &wc) : rdma_get_send_comp(id, &wc);
    if (n <= 0) return fail(recv ? "rdma_get_recv_comp" : "rdma_get_send_comp");
    if (wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "error: %s on the %s of message %d\n", ibv_wc_status_str(wc.status),
                recv ? "receive" : "send", index);
        return 2;
    }
    return 0;
}

static void fill(char *m, int i) {
    for (int k = 0; k < kMsgLen; ++k) m[k] = (char)('a' + (i * 7 + k) % 26);
}

static struct rdma_addrinfo *resolve(const char *host, const char *port, int passive) {
    struct rdma_addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_port_space = RDMA_PS_TCP;
    if (passive) hints.ai_flags = RAI_PASSIVE;
    if (rdma_getaddrinfo(host, port, &hints, &res)) {
        perror("rdma_getaddrinfo");
        return NULL;
    }
    return res;
}

static void caps(struct ibv_qp_init_attr *a) {
    memset(a, 0, sizeof *a);
    a->cap.max_send_wr = a->cap.max_recv_wr = 4;
    a->cap.max_send_sge = a->cap.max_recv_sge = 1;
    a->sq_sig_all = 1;
}

static int server(const char *port) {
    struct rdma_addrinfo *ai = resolve(NULL, port, 1);
    if (!ai) return 1;
    struct ibv_qp_init_attr attr;
    caps(&attr);
    struct rdma_cm_id *listen_id, *id;
    if (rdma_create_ep(&listen_id, ai, NULL, &attr)) return fail("rdma_create_ep");
    rdma_freeaddrinfo(ai);
    if (rdma_listen(listen_id, 1)) return fail("rdma_listen");
    if (rdma_get_request(listen_id, &id)) return fail("rdma_get_request");
    char buf[kMsgLen];
    struct ibv_mr *mr = rdma_reg_msgs(id, buf, sizeof buf);
    if (!mr) return fail("rdma_reg_msgs");
    if (rdma_post_recv(id, NULL, buf, sizeof buf, mr)) return fail("rdma_post_recv");
    if (rdma_accept(id, NULL)) return fail("rdma_accept");
    int rc = 0, count = 0;
    for (;; ++count) {
        struct ibv_wc wc;
        if (rdma_get_recv_comp(id, &wc) <= 0) break;  // the client left
        if (wc.status != IBV_WC_SUCCESS) {
            // A flush when the client disconnects is the normal end.
            if (wc.status != IBV_WC_WR_FLUSH_ERR) {
                fprintf(stderr, "error: %s on a receive\n", ibv_wc_status_str(wc.status));
                rc = 2;
            }
            break;
        }
        // Echo it, then wait for the next (the receive is reposted before the echo goes,
        // so the client's next message always finds one).
        char out[kMsgLen];
        memcpy(out, buf, sizeof out);
        if (rdma_post_recv(id, NULL, buf, sizeof buf, mr)) return fail("rdma_post_recv");
        if (rdma_post_send(id, NULL, out, sizeof out, NULL, IBV_SEND_INLINE))
            return fail("rdma_post_send");
        if ((rc = completed(id, 0, count)) != 0) break;
    }
    printf("server: echoed %d messages\n", count);
    rdma_disconnect(id);
    rdma_dereg_mr(mr);
    rdma_destroy_ep(id);
    rdma_destroy_ep(listen_id);
    return rc;
}

static int client(const char *host, const char *port, int count, int rnr_retry) {
    struct rdma_addrinfo *ai = resolve(host, port, 0);
    if (!ai) return 1;
    struct ibv_qp_init_attr attr;
    caps(&attr);
    struct rdma_cm_id *id;
    if (rdma_create_ep(&id, ai, NULL, &attr)) return fail("rdma_create_ep");
    rdma_freeaddrinfo(ai);
    char out[kMsgLen], in[kMsgLen];
    struct ibv_mr *mr = rdma_reg_msgs(id, in, sizeof in);
    if (!mr) return fail("rdma_reg_msgs");
    struct rdma_conn_param cp;
    memset(&cp, 0, sizeof cp);
    cp.retry_count = 7;
    cp.rnr_retry_count = (unsigned char)rnr_retry;
    if (rdma_connect(id, &cp)) return fail("rdma_connect");
    int rc = 0, i;
    for (i = 0; i < count && !rc; ++i) {
        fill(out, i);
        if (rdma_post_recv(id, NULL, in, sizeof in, mr)) return fail("rdma_post_recv");
        if (rdma_post_send(id, NULL, out, sizeof out, NULL, IBV_SEND_INLINE))
            return fail("rdma_post_send");
        if ((rc = completed(id, 0, i)) != 0 || (rc = completed(id, 1, i)) != 0) break;
        if (memcmp(in, out, sizeof in) != 0) {
            fprintf(stderr, "error: message %d came back changed\n", i);
            rc = 3;
        }
    }
    if (!rc) printf("client: %d messages echoed, every byte checked\n", count);
    rdma_disconnect(id);
    rdma_dereg_mr(mr);
    rdma_destroy_ep(id);
    return rc;
}

int main(int argc, char **argv) {
    const char *host = NULL, *port = "7471";
    int is_server = 0, count = 100, rnr_retry = 7, opt;
    while ((opt = getopt(argc, argv, "sc:p:n:r:")) != -1) {
        switch (opt) {
            case 's': is_server = 1; break;
            case 'c': host = optarg; break;
            case 'p': port = optarg; break;
            case 'n': count = atoi(optarg); break;
            case 'r': rnr_retry = atoi(optarg); break;
            default:
                fprintf(stderr, "usage: %s -s [-p PORT] | -c HOST [-p PORT] [-n COUNT] "
                                "[-r RNR_RETRY]\n", argv[0]);
                return 1;
        }
    }
    if (is_server == (host != NULL)) {
        fprintf(stderr, "%s: give -s or -c HOST\n", argv[0]);
        return 1;
    }
    return is_server ? server(port) : client(host, port, count, rnr_retry);
}
