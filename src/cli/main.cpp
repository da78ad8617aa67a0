// SPDX-License-Identifier: BSD-2-Clause
// softrdma: the command-line tool.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"

namespace {

void usage(FILE *to) {
    std::fputs(
        "usage: softrdma COMMAND [ARG...]\n"
        "\n"
        "  run [--host-paths] [--rsockets] [--] CMD [ARG...]\n"
        "      run CMD and its children on softrdma: our libraries, and a private view of\n"
        "      /dev/infiniband and /sys/class/infiniband* in which our devices exist (a user\n"
        "      and mount namespace; nothing changes outside it). --host-paths (root, where no\n"
        "      namespace can be made) creates /dev/infiniband entries on this system instead.\n"
        "      --rsockets also moves CMD's TCP sockets onto rsockets (librspreload.so).\n"
        "  devices [--json]\n"
        "      our devices: network interface, state, MTUs, node GUID and GID table\n"
        "  doctor [PROGRAM]\n"
        "      check what makes softrdma fail or slow here, and whether PROGRAM would load our\n"
        "      libraries; says what to do\n"
        "  stat [-w] [-i SECONDS] [-n COUNT] [--json] [PID]\n"
        "      live counters of every process using softrdma here (or PID): per process (CM)\n"
        "      and per QP (packets, bytes, RNR, access errors, drops); -w repeats with rates\n"
        "  res [--json] [PID]\n"
        "      open resources per process: QPs with state, peer and depths, MRs with sizes and\n"
        "      keys, CM ids with state and addresses\n"
        "  env\n"
        "      print the shell line that puts our libraries first on LD_LIBRARY_PATH\n"
        "      (eval \"$(softrdma env)\"); programs that read the kernel's device files want run.\n"
        "  --version\n"
        "      the version (the devices' fw_ver says the same)\n",
        to);
}

// A value the shell reads back as it is, inside single quotes.
std::string shell_quote(const std::string &s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

int env_command() {
    const std::string libs = softrdma::cli::library_dir();
    if (libs.empty()) {
        std::fprintf(stderr,
                     "softrdma env: cannot find our libibverbs.so.1 (set SOFTRDMA_LIBDIR)\n");
        return 1;
    }
    std::printf("export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n",
                shell_quote(libs).c_str());
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!std::strcmp(argv[1], "run")) return softrdma::cli::run_command(argc - 2, argv + 2);
    if (!std::strcmp(argv[1], "env")) return env_command();
    if (!std::strcmp(argv[1], "devices")) return softrdma::cli::devices_command(argc - 2, argv + 2);
    if (!std::strcmp(argv[1], "doctor")) return softrdma::cli::doctor_command(argc - 2, argv + 2);
    if (!std::strcmp(argv[1], "stat")) return softrdma::cli::stat_command(argc - 2, argv + 2);
    if (!std::strcmp(argv[1], "res")) return softrdma::cli::res_command(argc - 2, argv + 2);
    if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
        std::printf("softrdma %s\n", SOFTRDMA_VERSION);
        return 0;
    }
    std::fprintf(stderr, "softrdma: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
