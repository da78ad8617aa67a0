// SPDX-License-Identifier: BSD-2-Clause
// `softrdma doctor [PROGRAM]`: checks what makes softrdma fail or slow on this machine and says
// what to do. Each line is "ok", "warn" (works, but slower or with less) or "fail" (something
// a user will meet as an error), with the fix. Exit 1 if anything failed.
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "verbs/device.h"

namespace softrdma::cli {
namespace {

int g_failed = 0;

void say(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void say(const char *level, const char *fmt, ...) {
    if (!std::strcmp(level, "fail")) ++g_failed;
    std::printf("%-4s  ", level);
    va_list ap;
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
    std::printf("\n");
}

long read_long(const char *path, long fallback) {
    FILE *f = std::fopen(path, "re");
    if (!f) return fallback;
    long v = fallback;
    if (std::fscanf(f, "%ld", &v) != 1) v = fallback;
    std::fclose(f);
    return v;
}

// Whether an unprivileged user namespace can be made (what `softrdma run` needs unless root).
bool userns_works() {
    const pid_t p = fork();
    if (p < 0) return false;
    if (p == 0) _exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

void check_program(const std::string &libs, const char *program) {
    // What the program would load with our directory first on the library path.
    const std::string cmd = "LD_LIBRARY_PATH='" + libs + "' ldd '" + program + "' 2>&1";
    FILE *p = ::popen(cmd.c_str(), "r");
    if (!p) {
        say("warn", "%s: cannot run ldd (%s)", program, std::strerror(errno));
        return;
    }
    char line[1024];
    std::string verbs;
    bool uses = false;
    while (std::fgets(line, sizeof line, p)) {
        if (!std::strstr(line, "libibverbs.so.1") && !std::strstr(line, "librdmacm.so.1")) continue;
        uses = true;
        if (!std::strstr(line, libs.c_str())) verbs += line;
    }
    ::pclose(p);
    if (!uses) {
        say("warn",
            "%s: links neither libibverbs.so.1 nor librdmacm.so.1 (it may dlopen them, "
            "or not use RDMA at all)",
            program);
    } else if (!verbs.empty()) {
        say("fail",
            "%s: would load another RDMA library even with ours first on the path "
            "(an rpath or a static link?): %s  fix: rebuild it against softrdma "
            "(pkg-config softrdma) or without an rpath",
            program, verbs.c_str());
    } else {
        say("ok",
            "%s: loads our libibverbs/librdmacm from %s under `softrdma run` (or "
            "LD_LIBRARY_PATH=%s)",
            program, libs.c_str(), libs.c_str());
    }
}

}  // namespace

int doctor_command(int argc, char **argv) {
    if (argc > 1 || (argc == 1 && argv[0][0] == '-')) {
        std::fprintf(stderr, "usage: softrdma doctor [PROGRAM]\n");
        return 2;
    }
    g_failed = 0;
    std::string libs = library_dir();
    if (!libs.empty() && ::access((libs + "/libibverbs.so.1").c_str(), R_OK) != 0) {
        say("fail",
            "no libibverbs.so.1 in %s (SOFTRDMA_LIBDIR?)  fix: point SOFTRDMA_LIBDIR at "
            "the directory that holds our libraries, or unset it",
            libs.c_str());
        libs.clear();
    } else if (libs.empty())
        say("fail",
            "our libibverbs.so.1 is not next to this tool (a build tree's lib/ or an "
            "install's <libdir>/softrdma)  fix: set SOFTRDMA_LIBDIR to its directory");
    else
        say("ok", "libraries: %s", libs.c_str());

    const auto devs = verbs::scan_devices();
    bool lo = false;
    for (auto *d : devs) lo = lo || d->loopback();
    if (devs.empty())
        say("fail",
            "no devices: no network interface is up with an IP address  fix: bring one "
            "up (ip link set lo up)");
    else
        say(lo ? "ok" : "warn", "%zu device(s)%s", devs.size(),
            lo ? ", sr_lo among them" : "; no sr_lo: the loopback interface is down");

    const long rmem = read_long("/proc/sys/net/core/rmem_max", -1);
    if (rmem >= 0 && rmem < (4l << 20))
        say("warn",
            "net.core.rmem_max is %ld: UD QPs get smaller socket buffers, so smaller "
            "send windows and lower UD bandwidth  fix: sysctl -w net.core.rmem_max=4194304",
            rmem);
    else if (rmem >= 0)
        say("ok", "net.core.rmem_max %ld (UD QPs get their 4 MiB buffers)", rmem);

    struct rlimit nofile {};
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 4096)
        say("warn",
            "open-file limit %llu: every QP connection and CM id holds a socket; "
            "programs with thousands of connections run out  fix: ulimit -n 65536",
            (unsigned long long)nofile.rlim_cur);

    if (geteuid() == 0)
        say("ok", "root: `softrdma run` makes its device view without a user namespace");
    else if (userns_works())
        say("ok", "user namespaces work: `softrdma run` can make its device view");
    else
        say("warn",
            "no unprivileged user namespace here: `softrdma run` cannot show programs "
            "our devices in /sys/class/infiniband (verbs-only programs still work with "
            "LD_LIBRARY_PATH)  fix: sysctl -w kernel.unprivileged_userns_clone=1, or run "
            "as root with --host-paths");

    const int raw = ::socket(AF_PACKET, SOCK_RAW, 0);
    if (raw >= 0) {
        ::close(raw);
        say("ok", "CAP_NET_RAW: raw packet QPs can be created");
    } else {
        say("warn",
            "no CAP_NET_RAW: raw packet QPs fail with EPERM, as on the kernel's "
            "devices (everything else works)  fix: run as root, or grant cap_net_raw");
    }

    const long yama = read_long("/proc/sys/kernel/yama/ptrace_scope", 0);
    if (yama >= 2)
        say("warn",
            "kernel.yama.ptrace_scope is %ld: processes on this host cannot open each "
            "other's shared-memory segments, so same-host connections stay on TCP  fix: "
            "sysctl -w kernel.yama.ptrace_scope=1 (or 0)",
            yama);
    else if (yama == 1)
        say("ok",
            "same-host shared memory: yes (ptrace_scope 1: SOFTRDMA_SHM_CMA=1 works only "
            "between a process and its descendants)");
    else
        say("ok", "same-host shared memory: yes");

    if (argc == 1 && !libs.empty()) check_program(libs, argv[0]);
    std::printf("%s\n", g_failed ? "softrdma doctor: problems found (lines marked fail)"
                                 : "softrdma doctor: nothing stops softrdma here");
    return g_failed ? 1 : 0;
}

}  // namespace softrdma::cli
