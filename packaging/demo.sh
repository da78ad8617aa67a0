#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job from an installed softrdma: two processes exchange data over one RC queue pair
# on 127.0.0.1 (SEND, 512 KiB RDMA WRITE, 512 KiB RDMA READ, all checked). Run it on our
# libraries: `softrdma run -- /usr/libexec/softrdma/demo` (the container does).
set -e
here=$(dirname "$0")
port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000 ))
"$here/sr_rc_demo" -s -p "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 0.3
timeout 60 "$here/sr_rc_demo" -c 127.0.0.1 -p "$port"
wait "$server"
trap - EXIT
echo "demo: both processes finished OK"
