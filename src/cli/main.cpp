// SPDX-License-Identifier: BSD-2-Clause
// softrdma: the command-line tool.
#include <cstdio>
#include <cstring>

#include "cli/commands.h"

namespace {

void usage(FILE *to) {
    std::fputs(
        "usage: softrdma COMMAND [ARG...]\n"
        "\n"
        "  run [--host-paths] [--] CMD [ARG...]\n"
        "      run CMD and its children on softrdma: our libraries, and a private view of\n"
        "      /dev/infiniband and /sys/class/infiniband* in which our devices exist (a user\n"
        "      and mount namespace; nothing changes outside it). --host-paths (root, where no\n"
        "      namespace can be made) creates /dev/infiniband entries on this system instead.\n",
        to);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!std::strcmp(argv[1], "run")) return softrdma::cli::run_command(argc - 2, argv + 2);
    std::fprintf(stderr, "softrdma: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
