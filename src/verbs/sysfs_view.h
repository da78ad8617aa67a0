// SPDX-License-Identifier: BSD-2-Clause
// The kernel's view of our devices: the files /sys/class/infiniband*, /sys/class/net and
// /dev/infiniband would hold for them if a kernel driver (rxe) served them. Real stacks (UCX,
// pyverbs, MPI launchers) look there rather than through verbs; `softrdma run` writes this
// view into a private mount namespace and ibv_read_sysfs_file answers from it.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace softrdma::verbs {

class Device;

struct SysfsEntry {
    enum class Kind { kFile, kSymlink, kCharDevice };
    Kind kind;
    std::string path;     // absolute: /sys/class/... or /dev/infiniband/...
    std::string content;  // a file's text (with its newline) or a symlink's target
};

// Every entry of the view for `devices`, parents before children (directories are implied).
std::vector<SysfsEntry> sysfs_view(const std::vector<Device *> &devices);
// The text of the file at `path` in the view of the current devices, if it is one of ours.
std::optional<std::string> sysfs_view_file(const std::string &path);

}  // namespace softrdma::verbs
