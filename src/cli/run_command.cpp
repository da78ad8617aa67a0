// SPDX-License-Identifier: BSD-2-Clause
// `softrdma run [--host-paths] [--rsockets] [--] CMD...`: runs CMD, and everything it starts,
// on our libraries, in a view where our devices exist at the kernel's paths; with --rsockets,
// its TCP sockets on rsockets too (our librspreload.so preloaded).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/private_view.h"
#include "verbs/device.h"

namespace softrdma::cli {
namespace {

bool has_libibverbs(const std::string &dir) {
    return ::access((dir + "/libibverbs.so.1").c_str(), R_OK) == 0;
}

}  // namespace

std::string library_dir() {
    if (const char *env = std::getenv("SOFTRDMA_LIBDIR"); env && *env) return env;
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return {};
    exe[n] = '\0';
    std::string bin(exe);
    bin.erase(bin.rfind('/'));
    const std::string prefix = bin.substr(0, bin.rfind('/'));
    // The build tree (build/bin next to build/lib), then an installed prefix.
#ifndef SOFTRDMA_REL_LIBDIR
#define SOFTRDMA_REL_LIBDIR "lib/softrdma"
#endif
    for (const std::string &dir :
         {prefix + "/lib", prefix + "/" SOFTRDMA_REL_LIBDIR, prefix + "/lib/softrdma"})
        if (has_libibverbs(dir)) return dir;
    return {};
}

int run_command(int argc, char **argv) {
    bool host_paths = false;
    bool rsockets = false;
    int i = 0;
    for (; i < argc && argv[i][0] == '-'; ++i) {
        if (!std::strcmp(argv[i], "--")) {
            ++i;
            break;
        }
        if (!std::strcmp(argv[i], "--host-paths")) {
            host_paths = true;
        } else if (!std::strcmp(argv[i], "--rsockets")) {
            rsockets = true;
        } else {
            std::fprintf(stderr, "softrdma run: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (i == argc) {
        std::fprintf(stderr,
                     "usage: softrdma run [--host-paths] [--rsockets] [--] COMMAND [ARG...]\n");
        return 2;
    }
    const std::string libs = library_dir();
    if (libs.empty() || !has_libibverbs(libs)) {
        std::fprintf(stderr,
                     "softrdma run: libibverbs.so.1 not found next to this program "
                     "(set SOFTRDMA_LIBDIR)\n");
        return 1;
    }
    const char *old = std::getenv("LD_LIBRARY_PATH");
    const std::string path = old && *old ? libs + ":" + old : libs;
    ::setenv("LD_LIBRARY_PATH", path.c_str(), 1);
    if (rsockets) {
        const std::string pre = libs + "/rsocket/librspreload.so";
        if (::access(pre.c_str(), R_OK) != 0) {
            std::fprintf(stderr, "softrdma run: %s not found\n", pre.c_str());
            return 1;
        }
        // After what is preloaded already: a sanitizer's runtime must stay first.
        const char *had = std::getenv("LD_PRELOAD");
        const std::string all = had && *had ? std::string(had) + ":" + pre : pre;
        ::setenv("LD_PRELOAD", all.c_str(), 1);
    }

    const auto entries = verbs::sysfs_view(verbs::scan_devices());
    std::string why;
    if (host_paths) {
        if (::geteuid() != 0) {
            std::fprintf(stderr, "softrdma run: --host-paths needs root\n");
            return 1;
        }
        if (!create_host_device_files(entries, why)) {
            std::fprintf(stderr, "softrdma run: %s\n", why.c_str());
            return 1;
        }
    } else if (!enter_private_view(entries, why)) {
        // Plain verbs programs still work; stacks that look for the kernel's files will not.
        std::fprintf(stderr,
                     "softrdma run: no private view of /dev and /sys (%s): UCX, MPI and other "
                     "programs that look for /dev/infiniband will not find our devices.%s\n",
                     why.c_str(),
                     ::geteuid() == 0 ? " As root, --host-paths creates /dev/infiniband entries "
                                        "on this system instead."
                                      : "");
    }
    ::execvp(argv[i], argv + i);
    std::fprintf(stderr, "softrdma run: %s: %s\n", argv[i], std::strerror(errno));
    return 127;
}

}  // namespace softrdma::cli
