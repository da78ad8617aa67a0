// SPDX-License-Identifier: BSD-2-Clause
// Same-host baselines for the benchmark: how fast this machine moves SIZE-byte blocks
//   cma_write SIZE   process_vm_writev into another process (one copy between address spaces)
//   cma_read SIZE    process_vm_readv from another process
//   memcpy SIZE      memcpy between two buffers of this process
// Prints "gbps <GB/s>" (10^9 B/s): the best of 5 trials of at least 0.2 s each.
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s cma_write|cma_read|memcpy SIZE\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    const size_t size = strtoull(argv[2], NULL, 0);
    if (size == 0) return 2;
    char *local = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    char *other = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!local || !other) return 1;
    memset(local, 1, size);
    memset(other, 2, size);
    pid_t child = 0;
    int pfd[2];
    if (strcmp(mode, "memcpy") != 0) {
        // The peer: a process whose buffer (the same address after fork) we copy to or from.
        if (pipe(pfd) != 0) return 1;
        child = fork();
        if (child < 0) return 1;
        if (child == 0) {
            close(pfd[1]);
            char c;
            (void)!read(pfd[0], &c, 1);  // until the parent is done (or gone)
            _exit(0);
        }
        close(pfd[0]);
    }
    struct iovec l = {local, size}, r = {other, size};
    double best = 0;
    for (int trial = 0; trial < 5; ++trial) {
        uint64_t bytes = 0;
        const double t0 = now_s();
        double t;
        do {
            for (int i = 0; i < 16; ++i) {
                ssize_t n;
                if (strcmp(mode, "cma_write") == 0)
                    n = process_vm_writev(child, &l, 1, &r, 1, 0);
                else if (strcmp(mode, "cma_read") == 0)
                    n = process_vm_readv(child, &l, 1, &r, 1, 0);
                else
                    n = memcpy(other, local, size) ? (ssize_t)size : -1;
                if (n != (ssize_t)size) {
                    perror(mode);
                    if (child) kill(child, SIGKILL);
                    return 1;
                }
                bytes += size;
            }
            t = now_s() - t0;
        } while (t < 0.2);
        const double gbps = bytes / t / 1e9;
        if (gbps > best) best = gbps;
    }
    if (child) {
        close(pfd[1]);
        waitpid(child, NULL, 0);
    }
    printf("mode %s size %zu gbps %.3f\n", mode, size, best);
    return 0;
}
