// SPDX-License-Identifier: BSD-2-Clause
// A private view of /dev and /sys/class in which our devices exist where the kernel's would:
// this process (and what it execs, and their children) gets its own mount namespace, inside an
// unprivileged user namespace unless it is root, and the host is left as it was.
#pragma once
#include <string>
#include <vector>

#include "verbs/sysfs_view.h"

namespace softrdma::cli {

// Makes the view for `entries`. False, with the reason in `why`, if the kernel refuses a
// namespace or a mount (the caller decides whether to go on without the view).
bool enter_private_view(const std::vector<verbs::SysfsEntry> &entries, std::string &why);

// Root only, when no namespace can be made (a container without CAP_SYS_ADMIN): creates the
// missing /dev/infiniband entries on the real filesystem, as character devices with /dev/null's
// numbers. They stay after the command. False, with the reason in `why`, on failure.
bool create_host_device_files(const std::vector<verbs::SysfsEntry> &entries, std::string &why);

}  // namespace softrdma::cli
