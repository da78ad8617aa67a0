// SPDX-License-Identifier: BSD-2-Clause
// What a load test watches in a process to see leaks: open fds, threads, resident memory and
// the allocator's bytes in use, read from /proc/self and glibc.
#pragma once
#include <cstdint>

namespace sr_load {

struct ProcStats {
    int fds = 0;
    int listening = 0;  // of those, listening TCP sockets
    int threads = 0;
    int64_t rss_kib = 0;
    int64_t heap_kib = 0;  // malloc'ed and not freed (glibc mallinfo2); 0 under ASan
};

ProcStats proc_stats();
// One line on stdout, tagged with the role and the moment, so it lands in the ctest log.
void print_stats(const char *who, const char *when, const ProcStats &s);
// Soft RLIMIT_NOFILE up to the hard limit; returns the new soft limit.
int64_t raise_fd_limit();

// ASan keeps freed memory in quarantine and maps shadow memory, so RSS says nothing about
// leaks there (LeakSanitizer checks heap leaks at exit instead).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

}  // namespace sr_load
