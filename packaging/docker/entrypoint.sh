#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The container's entrypoint: runs its arguments on softrdma. `softrdma run` prefers a user and
# mount namespace of its own; where none can be made (Docker's default seccomp profile), root
# puts the device entries into the container's own /dev and /sys instead (--host-paths).
set -e
if [ "$#" -eq 0 ]; then set -- /usr/libexec/softrdma/demo; fi
if [ "$(id -u)" = 0 ] && ! unshare --user --mount true 2>/dev/null; then
    exec softrdma run --host-paths -- "$@"
fi
exec softrdma run -- "$@"
