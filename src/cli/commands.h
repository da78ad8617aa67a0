// SPDX-License-Identifier: BSD-2-Clause
// The subcommands of the `softrdma` tool; each takes the arguments after its name.
#pragma once
#include <cstdint>
#include <string>

namespace softrdma::cli {

int run_command(int argc, char **argv);
int devices_command(int argc, char **argv);
int doctor_command(int argc, char **argv);
int stat_command(int argc, char **argv);
int res_command(int argc, char **argv);
// Where our libibverbs.so.1 is: $SOFTRDMA_LIBDIR, else next to this program (a build tree's
// lib/ or an installed prefix's lib/softrdma/); empty if neither holds it.
std::string library_dir();
// A GID as an IPv6 address ("::ffff:127.0.0.1"); "?" if it cannot be printed.
std::string gid_text(const uint8_t raw[16]);

}  // namespace softrdma::cli
