// SPDX-License-Identifier: BSD-2-Clause
#include "load/proc_stats.h"

#include <dirent.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "process/harness.h"

namespace sr_load {
namespace {

// Entries of a /proc directory, without "." and "..".
int count_entries(const char *path) {
    DIR *d = opendir(path);
    PCHECK(d);
    int n = 0;
    while (const dirent *e = readdir(d))
        if (e->d_name[0] != '.') ++n;
    closedir(d);
    return n;
}

int count_listening() {
    DIR *d = opendir("/proc/self/fd");
    PCHECK(d);
    int n = 0;
    while (const dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        int on = 0;
        socklen_t len = sizeof on;
        if (getsockopt(std::atoi(e->d_name), SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on) ++n;
    }
    closedir(d);
    return n;
}

}  // namespace

ProcStats proc_stats() {
    ProcStats s;
    s.fds = count_entries("/proc/self/fd") - 1;  // minus the fd opendir itself holds
    s.listening = count_listening();
    s.threads = count_entries("/proc/self/task");
    // glibc keeps freed chunks mapped (a thousand 64 KiB stream buffers land in two arenas,
    // the application's and the engine thread's), so RSS would swing by tens of MiB with where
    // the last frees fell. Handing free pages back first makes RSS what is in use plus
    // fragmentation, which is what a leak grows.
    malloc_trim(0);
    FILE *f = std::fopen("/proc/self/statm", "r");
    PCHECK(f);
    long size = 0, resident = 0;
    PCHECK(std::fscanf(f, "%ld %ld", &size, &resident) == 2);
    std::fclose(f);
    s.rss_kib = int64_t(resident) * (sysconf(_SC_PAGESIZE) / 1024);
    const struct mallinfo2 mi = mallinfo2();
    s.heap_kib = int64_t((mi.uordblks + mi.hblkhd) / 1024);
    return s;
}

void print_stats(const char *who, const char *when, const ProcStats &s) {
    std::printf(
        "[%s] %-22s fds %5d (%2d listening)  threads %2d  rss %8lld KiB  heap in use "
        "%8lld KiB\n",
        who, when, s.fds, s.listening, s.threads, (long long)s.rss_kib, (long long)s.heap_kib);
    std::fflush(stdout);
}

int64_t raise_fd_limit() {
    rlimit r{};
    PCHECK(getrlimit(RLIMIT_NOFILE, &r) == 0);
    r.rlim_cur = r.rlim_max;
    PCHECK(setrlimit(RLIMIT_NOFILE, &r) == 0);
    return int64_t(r.rlim_cur);
}

}  // namespace sr_load
