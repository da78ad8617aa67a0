/* SPDX-License-Identifier: BSD-2-Clause */
/* Plain TCP connection setup rate on loopback, the baseline for cmtime's CM numbers.
 *
 *   tcp_connrate server PORT N        accept N connections, then exit
 *   tcp_connrate client ADDR PORT N   open N connections; print the elapsed time
 *
 * The client times socket()+connect() for all N and waits until the server has accepted
 * the last one (the server writes one byte on it), so both sides' work is counted, as in
 * cmtime's connect step. Every connection stays open until the end, like cmtime's.
 * Output (client): "connections N total_ms T us_per_conn U conn_per_s R". */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
    fprintf(stderr, "tcp_connrate: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int server(int port, int n) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) die("socket");
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a)) die("bind");
    if (listen(ls, n)) die("listen");
    int *fds = calloc(n, sizeof *fds);
    for (int i = 0; i < n; i++)
        if ((fds[i] = accept(ls, NULL, NULL)) < 0) die("accept");
    /* Tell the client the last accept is done. */
    if (write(fds[n - 1], "x", 1) != 1) die("write");
    char c;
    (void)!read(fds[n - 1], &c, 1); /* wait for the client to finish before closing */
    for (int i = 0; i < n; i++) close(fds[i]);
    close(ls);
    return 0;
}

static int client(const char *addr, int port, int n) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) die("address");
    int *fds = calloc(n, sizeof *fds);
    double t0 = now_ms();
    for (int i = 0; i < n; i++) {
        if ((fds[i] = socket(AF_INET, SOCK_STREAM, 0)) < 0) die("socket");
        if (connect(fds[i], (struct sockaddr *)&a, sizeof a)) die("connect");
    }
    char c;
    if (read(fds[n - 1], &c, 1) != 1) die("read");
    double ms = now_ms() - t0;
    (void)!write(fds[n - 1], "y", 1);
    for (int i = 0; i < n; i++) close(fds[i]);
    printf("connections %d total_ms %.3f us_per_conn %.3f conn_per_s %.1f\n", n, ms, ms * 1e3 / n,
           n / (ms / 1e3));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "server")) return server(atoi(argv[2]), atoi(argv[3]));
    if (argc == 5 && !strcmp(argv[1], "client")) return client(argv[2], atoi(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: tcp_connrate server PORT N | client ADDR PORT N\n");
    return 2;
}
